import { EventEmitter } from 'node:events';
import type { AddressInfo } from 'node:net';
import { DenyList, parseRevocationEntry, type RevocationEntry, revocationId } from '@herald/auth';
import { createServerKit, type Lifecycle, type ServerKit } from '@herald/http';
import { uuidv7 } from '@herald/ids';
import { createMetrics, type Metrics } from '@herald/metrics';
import {
  type Clock,
  closeRedis,
  createRedis,
  MemoryRevocationStore,
  type RedisClient,
  RedisRevocationStore,
  type RevocationStore,
  RevocationWatcher,
  redisTopologyFrom,
  settleWithin,
  systemClock,
} from '@herald/redis';
import type { FastifyInstance, FastifyServerOptions } from 'fastify';
import { subscriptionEvent, subscriptionRecords } from './active-subscriptions.js';
import { HubAuthorization } from './authorization.js';
import type { HubConfig } from './config.js';
import { registerHubRoutes } from './hub-routes.js';
import { HUB_PATH, HubIdentity } from './identity.js';
import { HubLimits } from './limits.js';
import { createHubMetrics, type HubMetrics } from './metrics.js';
import { partitionsOfMatchers } from './partitions.js';
import { PUBLISH_BODY_LIMIT, type PublishDependencies } from './publish.js';
import {
  type RegisterOptions,
  recordStreamEnd,
  type SubscribeDependencies,
  type SubscriberRegistry,
} from './subscribe.js';
import { type CloseReason, Subscriber, type SubscriberShared } from './subscriber.js';
import { SubscriberIndex } from './subscriptions.js';
import type { SubscriptionRecord, Transport } from './transport.js';
import { MemoryTransport } from './transport-memory.js';
import { RedisTransport } from './transport-redis.js';
import type { StoredUpdate, Update } from './update.js';

export { HUB_PATH };

export interface HubOptions {
  readonly config: HubConfig;
  /** A registry of its own per hub (tests run several hubs in one process). */
  readonly metrics?: Metrics;
  /** Extra fastify options (tests pass `logger: false`). */
  readonly fastify?: Omit<FastifyServerOptions, 'https' | 'http2'>;
  /** End-to-end pub/sub probe interval and timeout (Redis backend). */
  readonly probeInterval?: number;
  readonly probeTimeout?: number;
  /**
   * The clock the node's time-driven behaviour runs on (default: the system clock): token
   * expiry and lifetime closes, the dispatch timeout, heartbeats, the in-process history's age
   * bound, the registry's node leases and the partitions record's checks. A test gives a
   * `KeyClock` and moves it. Redis keeps its own time (the publish deadline, the history's age
   * bound, the record's TTL), and so do I/O bounds, the pub/sub probe and the drain.
   */
  readonly clock?: Clock;
}

/** Bound on publishing the subscription announcements still in flight at stop. */
const ANNOUNCEMENTS_STOP_TIMEOUT = 2000;
/** Reply deadline of the deny list's reads and writes when REDIS_COMMAND_TIMEOUT is not set. */
const REVOCATIONS_COMMAND_TIMEOUT = 2000;

/** One hub node: the local subscribers, the backend, and the decisions between them. */
export class Hub implements SubscriberRegistry {
  readonly index = new SubscriberIndex();
  /** `subscriber-closed` ({ iri, reason }): lets tests and embedders observe disconnects. */
  readonly events = new EventEmitter();
  readonly metrics: HubMetrics;
  readonly transport: Transport;
  readonly auth: HubAuthorization;
  /** The hub's URL and what derives from it; from configuration only, never from a request. */
  readonly identity: HubIdentity;
  readonly clock: Clock;
  /** The token deny list: this node's copy, where it is stored, what keeps the copy fresh. */
  readonly denyList: DenyList;
  readonly revocations: RevocationStore<RevocationEntry>;
  readonly revocationWatcher: RevocationWatcher<RevocationEntry>;
  /** Streams per subscriber subject and publishes per second per publisher (limits.ts). */
  readonly limits: HubLimits;
  /** What gives back each limited stream's slot when it closes. */
  private readonly slots = new WeakMap<Subscriber, () => void>();
  /** What every subscriber of this node shares (one object, not one per connection). */
  private readonly subscriberShared: SubscriberShared;
  private readonly revocationsRedis: RedisClient | undefined;
  /** Cancels the next heartbeat round. */
  private heartbeatTimer: (() => void) | undefined;
  private stopped = false;
  private draining = false;
  private drained: Promise<void> | undefined;
  private readonly closedWaiters = new Set<() => void>();
  private readonly pendingAnnouncements = new Set<Promise<void>>();

  constructor(
    readonly config: HubConfig,
    sharedMetrics: Metrics,
    private readonly app: FastifyInstance,
    options: Pick<HubOptions, 'probeInterval' | 'probeTimeout' | 'clock'>,
  ) {
    const clock = options.clock ?? systemClock;
    this.clock = clock;
    this.metrics = createHubMetrics(sharedMetrics, {
      historyLength: () => this.transport.historyLength(),
      fanoutMessagesReceived: () => this.transport.fanoutMessagesReceived,
    });
    this.identity = new HubIdentity(config.MERCURE_PUBLIC_URL);
    this.denyList = new DenyList(() => clock.now());
    this.auth = new HubAuthorization(
      config,
      app.log,
      (reason) => this.metrics.authFailures.inc({ reason }),
      this.denyList,
    );
    const auth = this.auth;
    this.subscriberShared = {
      clock,
      limits: {
        maxQueueBytes: config.MERCURE_MAX_CONNECTION_QUEUE_BYTES,
        maxQueueEvents: config.MERCURE_MAX_CONNECTION_QUEUE_EVENTS,
        dispatchTimeout: config.MERCURE_DISPATCH_TIMEOUT,
      },
      canReceive: (principal, topics) => auth.canReceive(principal, topics),
      onClose: (closed, reason) => this.onSubscriberClosed(closed, reason),
      onResponseClosed: (closed, statusCode) =>
        recordStreamEnd(sharedMetrics.httpRequestDuration, app.log, closed, statusCode),
    };
    const log = (level: 'info' | 'warn' | 'error', message: string, details?: object) =>
      app.log[level](details ?? {}, message);
    const redis = redisTopologyFrom(config);
    // Its own connection: the transport's are its own, and a deny-list read must not queue
    // behind a history read. The tenant limits use it too (a few small calls per request).
    this.revocationsRedis = redis
      ? createRedis({
          topology: redis,
          connectionName: 'herald-hub-revocations',
          commandTimeout: config.REDIS_COMMAND_TIMEOUT ?? REVOCATIONS_COMMAND_TIMEOUT,
        })
      : undefined;
    this.revocations = this.revocationsRedis
      ? new RedisRevocationStore({
          redis: this.revocationsRedis,
          prefix: config.MERCURE_REDIS_PREFIX,
          clock,
          codec: { idOf: revocationId, parse: parseRevocationEntry },
        })
      : new MemoryRevocationStore<RevocationEntry>(clock, { idOf: revocationId });
    this.revocationWatcher = new RevocationWatcher({
      store: this.revocations,
      denyList: this.denyList,
      clock,
      log: app.log,
      onAdded: () => this.closeRevokedStreams(),
    });
    this.limits = new HubLimits({
      redis: this.revocationsRedis,
      prefix: config.MERCURE_REDIS_PREFIX,
      defaults: {
        ...(config.MERCURE_LIMIT_SUBSCRIPTIONS !== undefined
          ? { subscriptions: config.MERCURE_LIMIT_SUBSCRIPTIONS }
          : {}),
        ...(config.MERCURE_LIMIT_PUBLISH_RATE !== undefined
          ? { publish: config.MERCURE_LIMIT_PUBLISH_RATE }
          : {}),
      },
      slotLeaseMs: config.MERCURE_LIMIT_LEASE,
      nodeId: uuidv7(),
      clock,
      scriptClock: options.clock ? 'key' : 'redis',
      refusals: this.metrics.limitRefusals,
      log: (message, details) => app.log.info(details, message),
    });
    this.transport = redis
      ? new RedisTransport({
          topology: redis,
          prefix: config.MERCURE_REDIS_PREFIX,
          historySize: config.MERCURE_HISTORY_SIZE,
          historyTtl: config.MERCURE_HISTORY_TTL,
          partitions: config.MERCURE_PARTITIONS,
          metrics: sharedMetrics,
          ...(config.REDIS_COMMAND_TIMEOUT !== undefined
            ? { readTimeout: config.REDIS_COMMAND_TIMEOUT }
            : {}),
          subscriptions: config.MERCURE_SUBSCRIPTIONS,
          subscriptionsLease: config.MERCURE_SUBSCRIPTIONS_LEASE,
          clock,
          log,
          ...(options.probeInterval !== undefined ? { probeInterval: options.probeInterval } : {}),
          ...(options.probeTimeout !== undefined ? { probeTimeout: options.probeTimeout } : {}),
        })
      : new MemoryTransport({
          historySize: config.MERCURE_HISTORY_SIZE,
          historyTtl: config.MERCURE_HISTORY_TTL,
          clock: () => clock.now(),
        });
    // The transport reports its health; the metrics are the hub's.
    this.transport.events.on('fanout-reconnected', () => this.metrics.pubsubReconnects.inc());
    this.transport.events.on('fanout-verified', (verified) =>
      this.metrics.pubsubProbeOk.set(verified ? 1 : 0),
    );
  }

  get isDraining(): boolean {
    return this.draining;
  }

  get anonymousAllowed(): boolean {
    return this.config.MERCURE_ANONYMOUS || this.config.MERCURE_DEV;
  }

  async start(): Promise<void> {
    if (this.transport.kind === 'memory') {
      this.app.log.warn(
        'no Redis is configured (REDIS_URL, REDIS_SENTINELS or REDIS_CLUSTER_NODES): using the in-process backend (single node only, history in memory); set one to run a cluster',
      );
    } else {
      this.app.log.info({ prefix: this.config.MERCURE_REDIS_PREFIX }, 'using the Redis backend');
    }
    this.transport.onOrphanedSubscriptions((records) => this.track(this.announceOrphans(records)));
    // Not awaited: with Redis away at boot the first read waits for its deadline, and the node
    // must not (issue #9, defect 7). Readiness waits for it instead (createHub).
    void this.revocationWatcher.start();
    await this.limits.start();
    await this.transport.start((update) => this.dispatch(update));
    const heartbeat = this.config.MERCURE_HEARTBEAT;
    if (heartbeat > 0) this.scheduleHeartbeats(heartbeat, Math.max(50, heartbeat / 4));
  }

  /** A heartbeat round every `every` ms of the node's clock, each from the end of the last. */
  private scheduleHeartbeats(interval: number, every: number): void {
    if (this.stopped) return;
    this.heartbeatTimer = this.clock.timer(this.clock.now() + every, () => {
      this.sendHeartbeats(interval);
      this.scheduleHeartbeats(interval, every);
    });
  }

  /**
   * Closes every local stream whose token the deny list now covers (issue #24 item 3: the hub
   * closes streams opened with a revoked token). Runs when the watcher finds new entries; one
   * pass over this node's subscribers, two map lookups each.
   */
  private closeRevokedStreams(): void {
    for (const subscriber of [...this.index.all()]) {
      const { principal } = subscriber;
      if (principal && this.auth.isRevoked(principal)) subscriber.close('revoked');
    }
  }

  /** The transport's listener: every update, once, in order. */
  private dispatch(update: StoredUpdate): void {
    const stop = this.metrics.fanoutDuration.startTimer();
    const delivered = this.index.dispatch(update);
    stop();
    if (delivered > 0) this.metrics.deliveriesTotal.inc(delivered);
  }

  private sendHeartbeats(interval: number): void {
    const idleSince = this.clock.now() - interval;
    for (const subscriber of this.index.all()) {
      if (subscriber.lastWriteAt <= idleSince) subscriber.heartbeat();
    }
  }

  /** What the subscribe route uses of this node. */
  get subscribeDependencies(): SubscribeDependencies {
    return {
      auth: this.auth,
      transport: this.transport,
      subscribers: this,
      anonymousAllowed: this.anonymousAllowed,
      legacyClaims: this.config.MERCURE_LEGACY_CLAIMS,
      topicsField: this.config.MERCURE_TOPICS_FIELD,
      acquireStream: (tenant) => this.limits.acquireStream(tenant),
      onReplayed: (count) => this.metrics.deliveriesTotal.inc(count),
    };
  }

  /** What the publish route uses of this node. */
  get publishDependencies(): PublishDependencies {
    return {
      auth: this.auth,
      publishOrigins: this.config.MERCURE_PUBLISH_ORIGINS,
      publish: (update) => this.publish(update),
      takePublish: (tenant) => this.limits.takePublish(tenant),
    };
  }

  register(options: RegisterOptions): Subscriber {
    const config = this.config;
    const partitions = partitionsOfMatchers(options.matchers, this.transport.partitions);
    const subscriber = new Subscriber({
      matchers: options.matchers,
      partitions,
      principal: options.principal,
      topicsField: options.topicsField ?? false,
      response: options.response,
      requestId: options.requestId,
      openedAt: options.openedAt,
      shared: this.subscriberShared,
    });
    // Before the snapshot: a partition joined now has its join point in it.
    this.transport.watch(partitions);
    if (options.replay) subscriber.beginReplay(this.transport.lastDispatchedPosition);
    this.index.add(subscriber);
    if (options.releaseSlot) this.slots.set(subscriber, options.releaseSlot);
    this.metrics.subscribersConnected.inc();
    this.metrics.subscribersTotal.inc();

    const expiresAt = options.principal?.expiresAt;
    if (expiresAt !== undefined) subscriber.closeAt(expiresAt, 'token_expired');
    // Revoked between its authentication and now (the watcher's pass may have run in between).
    if (options.principal && this.auth.isRevoked(options.principal))
      subscriber.closeAt(this.clock.now(), 'revoked');
    if (config.MERCURE_WRITE_TIMEOUT > 0) {
      // 80-100 % of the maximum, so connections opened together do not all reconnect together.
      const lifetime = config.MERCURE_WRITE_TIMEOUT * (0.8 + 0.2 * Math.random());
      subscriber.closeAt(this.clock.now() + lifetime, 'lifetime');
    }
    if (config.MERCURE_SUBSCRIPTIONS) this.track(this.announceSubscriber(subscriber, true));
    return subscriber;
  }

  private onSubscriberClosed(subscriber: Subscriber, reason: CloseReason): void {
    this.index.remove(subscriber);
    this.slots.get(subscriber)?.();
    this.transport.unwatch(subscriber.partitions);
    this.metrics.subscribersConnected.dec();
    if (reason === 'queue_full' || reason === 'dispatch_timeout') {
      this.metrics.slowSubscriberDisconnects.inc({ reason });
      this.app.log.info({ subscriber: subscriber.iri, reason }, 'slow subscriber disconnected');
    }
    if (reason === 'revoked') {
      this.app.log.info({ subscriber: subscriber.iri, reason }, 'stream closed: its token was revoked');
    }
    if (this.config.MERCURE_SUBSCRIPTIONS) this.track(this.announceSubscriber(subscriber, false));
    this.events.emit('subscriber-closed', { iri: subscriber.iri, reason });
    if (this.index.size === 0) {
      for (const resolve of this.closedWaiters) resolve();
      this.closedWaiters.clear();
    }
  }

  /** Subscription announcements still in flight must be published before the backend stops. */
  private track(announcement: Promise<void>): void {
    this.pendingAnnouncements.add(announcement);
    void announcement.finally(() => this.pendingAnnouncements.delete(announcement));
  }

  private async announceSubscriber(subscriber: Subscriber, active: boolean): Promise<void> {
    const records = subscriptionRecords(this.auth, subscriber);
    try {
      if (active) await this.transport.addSubscriptions(records);
      else await this.transport.removeSubscriptions(records.map((record) => record.id));
      for (const record of records)
        await this.publish(subscriptionEvent(`urn:uuid:${uuidv7()}`, record, active));
    } catch (error) {
      this.app.log.warn({ err: error, active }, 'could not record or announce a subscription change');
    }
  }

  /** `active: false` for the entries of a node that died, claimed by this node exactly once. */
  private async announceOrphans(records: readonly SubscriptionRecord[]): Promise<void> {
    this.app.log.info({ count: records.length }, 'announcing the end of subscriptions of a departed node');
    for (const record of records) {
      try {
        await this.publish(subscriptionEvent(`urn:uuid:${uuidv7()}`, record, false));
      } catch (error) {
        this.app.log.warn({ err: error }, 'could not announce an orphaned subscription');
      }
    }
  }

  async publish(update: Update): Promise<string> {
    const stop = this.metrics.publishDuration.startTimer();
    const { repeat } = await this.transport.publish(update);
    stop();
    if (repeat) this.metrics.updatesRepeatedTotal.inc();
    else this.metrics.updatesTotal.inc();
    return update.id;
  }

  /**
   * Graceful drain (hub.md): readiness is already failing, new subscribers get 503, and open
   * streams close spread over the drain window so their reconnects spread over the other nodes.
   */
  drain(deadline: number): Promise<void> {
    this.drained ??= this.closeSpread(deadline);
    return this.drained;
  }

  private async closeSpread(deadline: number): Promise<void> {
    this.draining = true;
    const subscribers = [...this.index.all()];
    if (subscribers.length === 0) return;
    const window = Math.max(0, Math.min(this.config.MERCURE_DRAIN_WINDOW, deadline - Date.now() - 1000));
    const allClosed = new Promise<void>((resolve) => this.closedWaiters.add(resolve));
    const step = window / subscribers.length;
    subscribers.forEach((subscriber, position) => {
      setTimeout(() => subscriber.close('drain'), Math.floor(step * position));
    });
    await allClosed;
  }

  /** Before the listener closes: lets a drain finish, then closes whatever streams remain. */
  async closeStreams(): Promise<void> {
    this.draining = true;
    if (this.drained) await this.drained;
    for (const subscriber of [...this.index.all()]) subscriber.close('shutdown');
  }

  /** After the listener closed: stops heartbeats and the backend. */
  async stop(): Promise<void> {
    this.stopped = true;
    this.heartbeatTimer?.();
    await this.revocationWatcher.stop();
    // Before their shared connection closes: the node's stream slots are given back at once.
    await settleWithin(this.limits.stop(), ANNOUNCEMENTS_STOP_TIMEOUT);
    if (this.revocationsRedis) await closeRedis(this.revocationsRedis);
    // Bounded: with Redis unreachable these would wait in the offline queue forever.
    await settleWithin(Promise.allSettled([...this.pendingAnnouncements]), ANNOUNCEMENTS_STOP_TIMEOUT);
    await this.transport.stop();
    this.auth.close();
  }
}

export interface HubServer {
  readonly app: FastifyInstance;
  readonly hub: Hub;
  readonly lifecycle: Lifecycle;
  readonly kit: ServerKit;
  /** Binds PORT/HOST and starts the backend. */
  listen(): Promise<AddressInfo>;
  /** Graceful: readiness off, drain, stop. */
  shutdown(reason?: string): Promise<void>;
  exitOnSignals(): void;
}

/**
 * An h2c connection with no frame either way for this long gets GOAWAY: node:http's HTTP/1.1
 * keep-alive bound as fastify sets it (72 s). Heartbeats (MERCURE_HEARTBEAT) keep a connection
 * with idle streams busy.
 */
const H2C_IDLE_TIMEOUT = 72_000;

/**
 * Streams one HTTP/2 connection on the TLS port may hold open at once: a browser's subscriptions
 * and requests to the hub (Go's HTTP/2 server, under Caddy and the reference hub, announces 250).
 */
const TLS_HTTP2_MAX_STREAMS = 250;

/** Builds a hub node (backend, routes from hub-routes.ts, lifecycle) without binding a port. */
export function createHub(options: HubOptions): HubServer {
  const { config } = options;
  const metrics = options.metrics ?? createMetrics({ defaultLabels: { service: 'hub' } });
  const kit = createServerKit({
    name: 'hub',
    config,
    metrics,
    bodyLimit: PUBLISH_BODY_LIMIT,
    h2c:
      config.MERCURE_H2C_PORT === undefined
        ? undefined
        : {
            port: config.MERCURE_H2C_PORT,
            maxStreams: config.MERCURE_H2C_MAX_STREAMS,
            idleTimeout: H2C_IDLE_TIMEOUT,
          },
    tlsHttp2: config.MERCURE_TLS_HTTP2
      ? { maxStreams: TLS_HTTP2_MAX_STREAMS, idleTimeout: H2C_IDLE_TIMEOUT }
      : undefined,
    ...(options.fastify ? { fastify: options.fastify } : {}),
  });
  const { app, lifecycle } = kit;
  const hub = new Hub(config, metrics, app, options);

  registerHubRoutes(app, hub);

  lifecycle.addReadinessCheck('backend', () => hub.transport.readiness());
  // No traffic before the node knows which tokens are revoked (docs/security.md, "Revocation").
  lifecycle.addReadinessCheck('revocations', async () =>
    hub.revocationWatcher.loaded ? undefined : 'the token revocation list has not been read yet',
  );
  lifecycle.onDrain((deadline) => hub.drain(deadline));
  app.addHook('preClose', async () => hub.closeStreams());
  app.addHook('onClose', async () => hub.stop());

  let started: Promise<void> | undefined;
  return {
    app,
    hub,
    lifecycle,
    kit,
    async listen() {
      // Started before binding (its listener is installed synchronously), but the port is not
      // held back while Redis is away at boot (issue #9, defect 7): the node answers /healthz
      // at once and /readyz 503 until the pub/sub path is verified.
      started ??= hub.start();
      const address = await kit.listen();
      await started;
      return address;
    },
    shutdown: (reason = 'shutdown') => kit.shutdown(reason),
    exitOnSignals: () => kit.exitOnSignals(),
  };
}

/** Builds and binds a hub node (programmatic entry point used by tests and main.ts). */
export async function startHub(
  config: HubConfig,
  options: Omit<HubOptions, 'config'> = {},
): Promise<HubServer> {
  const server = createHub({ ...options, config });
  await server.listen();
  return server;
}

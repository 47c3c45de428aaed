import { randomUUID } from 'node:crypto';
import { EventEmitter } from 'node:events';
import { fileURLToPath } from 'node:url';
import type { Metrics } from '@herald/metrics';
import {
  asRedisUnavailable,
  closeRedis,
  createRedis,
  describeTopology,
  hashTag,
  instrumentRedis,
  keyspace,
  type LuaScript,
  loadScripts,
  loggableError,
  OutageLog,
  parseRedisOptions,
  type Redis,
  type RedisTopology,
  replyWithin,
  runScript,
  type ScriptSet,
  type SentinelTopology,
  type StandaloneTopology,
  scriptNamed,
} from '@herald/redis';
import { TransportUnavailableError } from './errors.js';
import { RedisClock } from './redis-clock.js';
import type {
  Published,
  SubscriptionRecord,
  Transport,
  TransportEvents,
  TransportLog,
  UpdateListener,
} from './transport.js';
import { RedisFanout } from './transport-redis-fanout.js';
import { decodeEntry, readEntries, readNewestEntry } from './transport-redis-history.js';
import { RedisPublisher } from './transport-redis-publish.js';
import { RedisSubscriptionRegistry } from './transport-redis-registry.js';
import type { Position, StoredUpdate, Update } from './update.js';

/** `services/hub/lua/`, from src (tsx) and from dist alike. */
export const LUA_DIRECTORY = fileURLToPath(new URL('../lua/', import.meta.url));

/** Boot waits this long for a verified pub/sub path, then starts not-ready and keeps probing. */
const FIRST_VERIFICATION_TIMEOUT = 3000;
/**
 * Bound on a read a request waits for (a history page, the registry, a cursor lookup; ms): past
 * it, or at once while the connection is lost, the request answers 503 instead of waiting for
 * Redis to come back.
 */
export const READ_TIMEOUT = 2000;
/** Bound on closing a connection at stop (ms). */
const CLOSE_TIMEOUT = 1000;

/**
 * A read that failed because Redis could not serve it becomes a TransportUnavailableError (the
 * request answers 503, retry later); any other failure (a bug, a failed script) is left as is.
 */
async function unavailableAsTyped<T>(read: Promise<T>): Promise<T> {
  try {
    return await read;
  } catch (error) {
    const unavailable = asRedisUnavailable(error);
    if (unavailable) throw new TransportUnavailableError(unavailable.message, { cause: unavailable });
    throw error;
  }
}

export interface RedisTransportOptions {
  /** Where Redis lives (`redisTopologyFrom`); `url` is the standalone shortcut. One is required. */
  readonly topology?: RedisTopology;
  readonly url?: string;
  /** Key and channel prefix (MERCURE_REDIS_PREFIX). */
  readonly prefix: string;
  readonly historySize: number;
  readonly historyTtl: number;
  /** The process registry: Redis command durations are recorded there. */
  readonly metrics: Metrics;
  /** Maintain the cluster-wide active subscriptions registry with a lease per node. */
  readonly subscriptions: boolean;
  readonly subscriptionsLease: number;
  /** Interval between end-to-end pub/sub probes while healthy (default 5 s). */
  readonly probeInterval?: number;
  /** A probe not back within this bound marks the pub/sub path unverified (default 2 s). */
  readonly probeTimeout?: number;
  readonly log?: TransportLog;
}

/**
 * Redis backend. History is one stream; publishing is one Lua script (XADD + PUBLISH with the
 * position stamped in the message, transport-redis-publish.ts); each node SUBSCRIBEs once and fans
 * out locally (transport-redis-fanout.ts); the active subscriptions registry lives beside it
 * (transport-redis-registry.ts). This class owns the connections and answers history reads.
 */
/**
 * The topology the transport connects to. Redis Cluster is refused here until the hub's keys,
 * channels and fan-out run on it (issue #12 item 3: sharded pub/sub, declared slots).
 */
function serverTopology(options: RedisTransportOptions): StandaloneTopology | SentinelTopology {
  const topology =
    options.topology ?? (options.url === undefined ? undefined : parseRedisOptions(options.url).topology);
  if (!topology) throw new Error('RedisTransport: a topology or a url is required');
  if (topology.kind === 'cluster') {
    throw new Error(
      'the hub does not run on Redis Cluster yet (issue #12): use REDIS_URL or REDIS_SENTINELS',
    );
  }
  return topology;
}

export class RedisTransport implements Transport {
  readonly kind = 'redis' as const;
  readonly events = new EventEmitter<TransportEvents>();
  readonly nodeId = randomUUID();
  /** Background work that may wait out an outage: registry writes, the fan-out's catch-up reads. */
  private readonly command: Redis;
  /**
   * Reads a request waits for (history, the registry, the cursor lookup) go through their own
   * deadline connection (`commandTimeout`): refused at once while Redis is away and after
   * READ_TIMEOUT when it stalls, so the request answers 503 instead of hanging.
   */
  private readonly reader: Redis;
  /**
   * Publishes (and the probe) go through their own fail-fast connection: while Redis is away a
   * publish fails at once instead of waiting in ioredis's offline queue, and a publish in flight
   * when the connection drops is failed, not resent later (docs/hub.md, resent publishes).
   */
  private readonly publisher: Redis;
  private readonly subscriber: Redis;
  private readonly clock: RedisClock;
  private readonly outages: OutageLog;
  private readonly scripts: ScriptSet;
  private readonly keys;
  private readonly fanout: RedisFanout;
  private readonly publishes: RedisPublisher;
  private readonly registry: RedisSubscriptionRegistry;

  constructor(private readonly options: RedisTransportOptions) {
    const space = keyspace(`${options.prefix}${hashTag('hub')}:`);
    this.keys = {
      history: space.key('history'),
      historyIds: space.key('history-ids'),
      historyIdsByTime: space.key('history-ids-by-time'),
      channel: space.key('updates'),
    };
    this.scripts = loadScripts(LUA_DIRECTORY);
    const topology = serverTopology(options);
    this.command = createRedis({ topology, connectionName: 'herald-hub-command' });
    this.reader = createRedis({
      topology,
      connectionName: 'herald-hub-reader',
      commandTimeout: READ_TIMEOUT,
    });
    this.publisher = createRedis({ topology, connectionName: 'herald-hub-publisher', failFast: true });
    this.subscriber = createRedis({ topology, connectionName: 'herald-hub-subscriber', forSubscriber: true });
    instrumentRedis(this.command, options.metrics.redisCommandDuration);
    instrumentRedis(this.reader, options.metrics.redisCommandDuration);
    instrumentRedis(this.publisher, options.metrics.redisCommandDuration);
    // Outages surface through readiness and two log lines (lost, back); without an 'error'
    // listener ioredis would print every retry.
    this.outages = new OutageLog(
      {
        warn: (details, message) => this.log('warn', message, details),
        info: (details, message) => this.log('info', message, details),
      },
      describeTopology(topology),
    );
    this.outages.watch(this.command, 'herald-hub-command');
    this.outages.watch(this.reader, 'herald-hub-reader');
    this.outages.watch(this.publisher, 'herald-hub-publisher');
    this.outages.watch(this.subscriber, 'herald-hub-subscriber');
    this.clock = new RedisClock(this.publisher);
    const log: TransportLog = (level, message, details) => this.log(level, message, details);
    this.fanout = new RedisFanout({
      subscriber: this.subscriber,
      publisher: this.publisher,
      command: this.command,
      clock: this.clock,
      outages: this.outages,
      historyKey: this.keys.history,
      channel: this.keys.channel,
      events: this.events,
      log,
      ...(options.probeInterval !== undefined ? { probeInterval: options.probeInterval } : {}),
      ...(options.probeTimeout !== undefined ? { probeTimeout: options.probeTimeout } : {}),
    });
    this.publishes = new RedisPublisher({
      publisher: this.publisher,
      clock: this.clock,
      script: this.script('publish'),
      keys: [this.keys.history, this.keys.historyIds, this.keys.historyIdsByTime],
      channel: this.keys.channel,
      historySize: options.historySize,
      historyTtl: options.historyTtl,
    });
    this.registry = new RedisSubscriptionRegistry({
      command: this.command,
      reader: this.reader,
      nodeId: this.nodeId,
      keys: {
        subscriptions: space.key('subscriptions'),
        leases: space.key('node-leases'),
        nodeSubscriptions: space.key('node-subscriptions', this.nodeId),
        nodeSubscriptionsPrefix: space.key('node-subscriptions', ''),
        reapClaimPrefix: space.key('reap-claim', ''),
      },
      leaseRenewScript: this.script('lease-renew'),
      reapScript: this.script('reap'),
      lease: options.subscriptionsLease,
      outages: this.outages,
      log,
    });
  }

  private script(name: string): LuaScript {
    return scriptNamed(this.scripts, name);
  }

  private log(level: 'info' | 'warn' | 'error', message: string, details?: object): void {
    this.options.log?.(level, message, details);
  }

  get lastDispatchedPosition(): Position {
    return this.fanout.lastDispatchedPosition;
  }

  async start(listener: UpdateListener): Promise<void> {
    const { verified } = await this.fanout.start(listener);
    if (this.options.subscriptions) this.registry.start();
    // Boot waits for a verified pub/sub path, but not forever: a node that cannot verify it starts
    // not-ready and keeps probing.
    await replyWithin(verified, FIRST_VERIFICATION_TIMEOUT, 'first pub/sub verification').catch(
      () => undefined,
    );
  }

  async publish(update: Update): Promise<Published> {
    if (this.publisher.status !== 'ready') {
      throw new TransportUnavailableError(`Redis publish connection ${this.publisher.status}`);
    }
    try {
      if (!this.clock.known) await this.clock.measure();
      return await this.publishes.publish(update);
    } catch (error) {
      this.log('error', 'publish failed', { err: loggableError(error) });
      throw new TransportUnavailableError('publish failed', { cause: error });
    }
  }

  findPosition(eventId: string): Promise<Position | undefined> {
    return unavailableAsTyped(
      runScript<string | null>(
        this.reader,
        this.script('find'),
        [this.keys.historyIds, this.keys.history],
        [eventId],
      ).then((position) => position ?? undefined),
    );
  }

  async readHistory(after: Position | undefined, upTo: Position, limit: number): Promise<StoredUpdate[]> {
    const entries = await unavailableAsTyped(readEntries(this.reader, this.keys.history, after, upTo, limit));
    return entries.map(decodeEntry);
  }

  async lastEventId(): Promise<string | undefined> {
    const newest = await unavailableAsTyped(readNewestEntry(this.reader, this.keys.history));
    return newest ? decodeEntry(newest).id : undefined;
  }

  /** Scraped by /metrics: answers (or fails) within READ_TIMEOUT even while Redis is down. */
  historyLength(): Promise<number> {
    return unavailableAsTyped(this.reader.xlen(this.keys.history));
  }

  async readiness(): Promise<string | undefined> {
    if (this.command.status !== 'ready') return `Redis connection ${this.command.status}`;
    if (this.publisher.status !== 'ready') return `Redis connection ${this.publisher.status} (publisher)`;
    if (this.reader.status !== 'ready') return `Redis connection ${this.reader.status} (reader)`;
    if (!this.fanout.verified) return 'pub/sub path not verified (probe pending or failed)';
    return undefined;
  }

  addSubscriptions(records: readonly SubscriptionRecord[]): Promise<void> {
    return this.registry.add(records);
  }

  removeSubscriptions(ids: readonly string[]): Promise<void> {
    return this.registry.remove(ids);
  }

  listSubscriptions(): Promise<SubscriptionRecord[]> {
    return unavailableAsTyped(this.registry.list());
  }

  onOrphanedSubscriptions(handler: (records: SubscriptionRecord[]) => void): void {
    this.registry.onOrphaned(handler);
  }

  async stop(): Promise<void> {
    this.fanout.stop();
    await this.registry.stop();
    this.subscriber.disconnect();
    await Promise.all(
      [this.command, this.publisher, this.reader].map((connection) => closeRedis(connection, CLOSE_TIMEOUT)),
    );
  }
}

import type { KeyObject } from 'node:crypto';
import type { AddressInfo } from 'node:net';
import { DenyList, parseRevocationEntry, type RevocationEntry, revocationId } from '@herald/auth';
import { ConfigError } from '@herald/config';
import { createServerKit } from '@herald/http';
import { createMetrics } from '@herald/metrics';
import {
  type Clock,
  closeRedis,
  createRedis,
  RedisRevocationStore,
  type RedisTopology,
  RevocationWatcher,
  redisTopologyFrom,
  systemClock,
} from '@herald/redis';
import type { FastifyInstance, FastifyServerOptions, RouteOptions } from 'fastify';
import { brokerAuthPlugin, requireDeclaredAccess } from './auth.js';
import { BodyBudget, installBodyBudget } from './body-budget.js';
import type { BrokerConfig } from './config.js';
import type { BrokerContext } from './context.js';
import { PayloadCipher, PayloadEncryption } from './encryption.js';
import { HubPublisher, signingKey } from './hub-publisher.js';
import { LongPoll } from './long-poll.js';
import { type Maintenance, startMemoryMaintenance, startRedisMaintenance } from './maintenance.js';
import { createBrokerMetrics } from './metrics.js';
import { OutboxRelay } from './outbox.js';
import { registerConventions } from './routes/common.js';
import { registerConsoleRoutes } from './routes/console.js';
import { registerConsumerGroupRoutes } from './routes/consumer-groups.js';
import { registerDataPlaneRoutes } from './routes/data-plane.js';
import { registerLimitRoutes } from './routes/limits.js';
import { registerOutboxRoutes } from './routes/outbox.js';
import { registerResourceRoutes } from './routes/resources.js';
import { registerRevocationRoutes } from './routes/revocations.js';
import { registerStatusRoutes } from './routes/status.js';
import { registerStreamsRoutes } from './routes/streams.js';
import { registerTraceRoutes } from './routes/traces.js';
import type { BrokerStorage } from './storage.js';
import { startEmbeddedStorage } from './storage-embedded.js';
import { RedisStorage } from './storage-redis.js';
import { createStreamsMetrics } from './streams/metrics.js';
import { BrokerLimits } from './tenant-limits.js';
import { LIMITS } from './validation.js';

export { authConfigProblem, classifyBrokerRoute } from './auth.js';
export { type BrokerConfig, brokerSpec } from './config.js';
export { entryFields, type MessageFields } from './redis/message-record.js';
export { loadBrokerScripts } from './scripts.js';
export type { BrokerStorage } from './storage.js';
export { type EmbeddedStorageOptions, startEmbeddedStorage } from './storage-embedded.js';
export { RedisStorage } from './storage-redis.js';

export interface Broker {
  readonly app: FastifyInstance;
  readonly address: AddressInfo;
  readonly url: string;
  readonly storage: BrokerStorage;
  /** Keeps this node's token deny list equal to the stored one (docs/security.md, "Revocation"). */
  readonly revocations: RevocationWatcher<RevocationEntry>;
  /** Graceful stop: parked pops answer, in-flight requests finish, connections close. */
  close(): Promise<void>;
}

export interface StartOptions {
  /** Extra fastify options (tests pass `logger: false`). */
  readonly fastify?: Omit<FastifyServerOptions, 'https' | 'http2'>;
  /** Sees every route as it is registered (tests check each route's access declaration). */
  readonly onRoute?: (route: RouteOptions) => void;
  /** Where the console's built files are (default: services/console/dist). */
  readonly consoleRoot?: string;
  /**
   * SIGTERM/SIGINT shut the node down and exit the process (main.ts). Installed before the
   * listener opens, so a signal that comes right after "listening" is never the default kill.
   */
  readonly exitOnSignals?: boolean;
  /**
   * The clock storage reads (default: the system clock). A test gives its own to move time: on
   * Redis the scripts are then loaded on the key clock, so the test writes its time to each
   * queue base's `~test-clock` key (`KeyClock`, shared/redis README.md "One clock").
   */
  readonly clock?: Clock;
}

/** Reply deadline of the deny list's reads and writes when REDIS_COMMAND_TIMEOUT is not set. */
const REVOCATIONS_COMMAND_TIMEOUT = 2000;

/** The outbox's way to the hub (BROKER_HUB_URL, BROKER_HUB_JWT_KEY), or undefined when none is set. */
async function hubPublisherFrom(config: BrokerConfig, clock: Clock): Promise<HubPublisher | undefined> {
  if (!config.BROKER_HUB_URL) {
    if (config.BROKER_HUB_JWT_KEY)
      throw new ConfigError('BROKER_HUB_JWT_KEY', 'is set without BROKER_HUB_URL');
    return undefined;
  }
  if (!config.BROKER_HUB_JWT_KEY)
    throw new ConfigError(
      'BROKER_HUB_JWT_KEY',
      'is required with BROKER_HUB_URL: the key the hub verifies publishers with',
    );
  let key: KeyObject;
  try {
    key = signingKey(config.BROKER_HUB_JWT_KEY, config.BROKER_HUB_JWT_ALG);
  } catch {
    throw new ConfigError(
      'BROKER_HUB_JWT_KEY',
      `is not a signing key for ${config.BROKER_HUB_JWT_ALG} (a PKCS#8 private key PEM for an asymmetric algorithm)`,
    );
  }
  return HubPublisher.start({ url: config.BROKER_HUB_URL, key, algorithm: config.BROKER_HUB_JWT_ALG, clock });
}

/** Starts one broker node: storage, maintenance, HTTP listener. */
export async function startBroker(config: BrokerConfig, options: StartOptions = {}): Promise<Broker> {
  // Throws a ConfigError naming the variable when the Redis variables do not make one topology.
  const redisTopology = redisTopologyFrom(config);
  if (!redisTopology && config.BROKER_MIN_REPLICAS_ACK > 0) {
    throw new ConfigError(
      'BROKER_MIN_REPLICAS_ACK',
      'needs Redis replicas (REDIS_SENTINELS or REDIS_CLUSTER_NODES, or REDIS_URL of a primary with replicas); the in-process backend has none',
    );
  }
  const publisher = await hubPublisherFrom(config, options.clock ?? systemClock);
  const metrics = createMetrics({ defaultLabels: { service: 'broker' } });
  let storage: BrokerStorage | undefined;
  const brokerMetrics = createBrokerMetrics(metrics, () => storage, config.BROKER_METRICS_MAX_QUEUES);
  const streamsMetrics = createStreamsMetrics(metrics, () => storage, config.BROKER_METRICS_MAX_QUEUES);
  const kit = createServerKit({
    name: 'broker',
    config,
    metrics,
    metricsPaths: ['/metrics', '/metrics/prometheus'],
    bodyLimit: config.BROKER_BODY_LIMIT_BYTES,
    // The kit's probes and metrics are public like /health (docs/broker-configuration.md, "Authentication").
    routeConfig: { access: 'public' },
    // Every route, the kit's included, must declare its level: refused at registration if not.
    onRoute: (route) => {
      requireDeclaredAccess(route);
      options.onRoute?.(route);
    },
    // fastify's default of 100 answered 414 to a pop by path of a 101..512-character queue name.
    fastify: {
      ...options.fastify,
      routerOptions: { maxParamLength: LIMITS.maxPathParamLength, ...options.fastify?.routerOptions },
    },
  });
  const { app, lifecycle } = kit;
  const limits = {
    ...(config.BROKER_LIMIT_PUSH_RATE !== undefined ? { push: config.BROKER_LIMIT_PUSH_RATE } : {}),
    ...(config.BROKER_LIMIT_IN_FLIGHT !== undefined ? { inflight: config.BROKER_LIMIT_IN_FLIGHT } : {}),
  };
  // Where the storage's Redis is: the configured one, or the embedded engine's socket.
  let storageTopology: RedisTopology;
  if (redisTopology) {
    storageTopology = redisTopology;
    storage = new RedisStorage({
      topology: redisTopology,
      prefix: config.BROKER_KEY_PREFIX,
      slotGroup: config.BROKER_REDIS_SLOT_GROUP,
      oneSlot: config.BROKER_REDIS_ONE_SLOT,
      transactionDeadlineMs: config.BROKER_TRANSACTION_RECOVERY_AFTER,
      replicaAck: {
        replicas: config.BROKER_MIN_REPLICAS_ACK,
        timeoutMs: config.BROKER_MIN_REPLICAS_ACK_TIMEOUT,
      },
      commandDuration: metrics.redisCommandDuration,
      ...(config.REDIS_COMMAND_TIMEOUT !== undefined
        ? { commandTimeoutMs: config.REDIS_COMMAND_TIMEOUT }
        : {}),
      log: app.log,
      limits,
      ...(options.clock ? { clock: options.clock, scriptClock: 'key' as const } : {}),
    });
  } else {
    const embedded = await startEmbeddedStorage({
      prefix: config.BROKER_KEY_PREFIX,
      commandDuration: metrics.redisCommandDuration,
      log: app.log,
      limits,
      ...(options.clock ? { clock: options.clock } : {}),
    });
    storage = embedded;
    storageTopology = embedded.topology;
    app.log.warn(
      'No Redis is configured (REDIS_URL, REDIS_SENTINELS, REDIS_CLUSTER_NODES): using the in-process backend (one node; messages do not survive a restart)',
    );
  }
  const activeStorage = storage;
  // Not awaited (Redis may be away at boot): the overrides are read on the next rounds.
  activeStorage.limits.start().catch(() => undefined);
  const clock = options.clock ?? systemClock;
  // The token deny list, next to the queues (the embedded engine answers its commands too) on a
  // connection of its own, so a read never queues behind a long poll's.
  const revocationsRedis = createRedis({
    topology: storageTopology,
    connectionName: 'herald-broker-revocations',
    commandTimeout: config.REDIS_COMMAND_TIMEOUT ?? REVOCATIONS_COMMAND_TIMEOUT,
  });
  const revocationStore = new RedisRevocationStore({
    redis: revocationsRedis,
    prefix: config.BROKER_KEY_PREFIX,
    clock,
    codec: { idOf: revocationId, parse: parseRevocationEntry },
  });
  const denyList = new DenyList(() => clock.now());
  const revocations = new RevocationWatcher({ store: revocationStore, denyList, clock, log: app.log });
  // Not awaited: with Redis away at boot the first read waits for its deadline, and the node
  // listens at once (issue #9, defect 7); readiness waits for it instead (below).
  void revocations.start();
  const longPoll = new LongPoll(activeStorage.availability, clock, (parked) =>
    brokerMetrics.parkedLongPolls.set(parked),
  );
  const bodyBudget =
    config.BROKER_BODY_BUDGET_BYTES > 0
      ? new BodyBudget(config.BROKER_BODY_BUDGET_BYTES, config.BROKER_BODY_BUDGET_WAIT, clock, (state) => {
          brokerMetrics.bodyBytesInFlight.set(state.bytesInFlight);
          brokerMetrics.bodiesWaiting.set(state.waiting);
        })
      : undefined;
  const context: BrokerContext = {
    storage: activeStorage,
    clock,
    metrics: brokerMetrics,
    longPoll,
    log: app.log,
    encryption: new PayloadEncryption(
      activeStorage.catalog,
      new PayloadCipher(config.QUEEN_ENCRYPTION_KEY, config.QUEEN_ENCRYPTION_OLD_KEYS),
      app.log,
    ),
    limits: new BrokerLimits(activeStorage.limits, config.BROKER_LIMIT_TENANT, brokerMetrics.limitRefusals),
    hubConfigured: publisher !== undefined,
    defaultBatchSize: config.DEFAULT_BATCH_SIZE,
    defaultTimeout: config.DEFAULT_TIMEOUT,
    maxPayloadBytes: config.BROKER_MAX_PAYLOAD_BYTES,
    bodyBudget,
  };
  // On every node: transactions across Cluster slots are applied and recovered through it too.
  const relay = new OutboxRelay({
    outbox: activeStorage.outbox,
    publisher,
    cipher: context.encryption.cipher,
    clock,
    log: app.log,
    registry: metrics.registry,
  });
  const intervals = {
    leaseSweepMs: config.BROKER_LEASE_SWEEP_INTERVAL,
    retentionMs: config.BROKER_RETENTION_INTERVAL,
    statsMs: config.BROKER_STATS_INTERVAL,
  };
  // Not awaited: with Redis away at boot the node listens at once and reports not ready
  // (issue #9, defect 7); maintenance schedules its jobs when Redis is reachable.
  const maintenance: Maintenance = redisTopology
    ? startRedisMaintenance({
        housekeeping: activeStorage.housekeeping,
        metrics: brokerMetrics,
        topology: redisTopology,
        keyPrefix: config.BROKER_KEY_PREFIX,
        intervals,
        log: app.log,
      })
    : startMemoryMaintenance({
        housekeeping: activeStorage.housekeeping,
        metrics: brokerMetrics,
        intervals,
        log: app.log,
      });

  await app.register(brokerAuthPlugin, {
    settings: config,
    onFailure: (reason) => brokerMetrics.authFailures.inc({ reason }),
    revocations: denyList,
  });
  // After authentication's hook: a request it refuses never waits for room.
  if (bodyBudget) {
    installBodyBudget(app, bodyBudget, config.BROKER_BODY_LIMIT_BYTES, () =>
      brokerMetrics.bodyBudgetRefusals.inc(),
    );
  }
  registerConventions(app);
  registerDataPlaneRoutes(app, context);
  registerLimitRoutes(app, context);
  registerOutboxRoutes(app, context);
  registerResourceRoutes(app, context);
  registerConsumerGroupRoutes(app, context);
  registerTraceRoutes(app, context);
  registerStreamsRoutes(app, context, streamsMetrics);
  registerStatusRoutes(app, context, maintenance);
  registerRevocationRoutes(app, {
    store: revocationStore,
    applyRevocations: () => revocations.refresh(),
    clock,
  });
  registerConsoleRoutes(app, options.consoleRoot);

  lifecycle.addReadinessCheck('storage', () => activeStorage.ready());
  lifecycle.addReadinessCheck('maintenance', () => maintenance.readiness());
  // No traffic before the node knows which tokens are revoked (docs/security.md, "Revocation").
  lifecycle.addReadinessCheck('revocations', async () =>
    revocations.loaded ? undefined : 'the token revocation list has not been read yet',
  );
  // Parked pops answer 204 at once so the listener can close without waiting for timeouts.
  lifecycle.onDrain(async () => longPoll.close());
  relay.start();
  app.addHook('onClose', async () => {
    longPoll.close();
    await relay.stop();
    await publisher?.close();
    await maintenance.close();
    await revocations.stop();
    await closeRedis(revocationsRedis);
    await activeStorage.close();
  });

  if (options.exitOnSignals) kit.exitOnSignals();
  const address = await kit.listen();
  const host = address.family === 'IPv6' ? `[${address.address}]` : address.address;
  const scheme = config.TLS_CERT_FILE ? 'https' : 'http';
  return {
    app,
    address,
    url: `${scheme}://${host === '0.0.0.0' || host === '[::]' ? '127.0.0.1' : host}:${address.port}`,
    storage: activeStorage,
    revocations,
    close: () => kit.shutdown('close'),
  };
}

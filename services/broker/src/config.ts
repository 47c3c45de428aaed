import { SUPPORTED_ALGORITHMS } from '@herald/auth';
import {
  boolean,
  duration,
  enumOf,
  hexBytes,
  hexBytesList,
  integer,
  list,
  string,
  url,
} from '@herald/config';
import { httpSettings } from '@herald/http';
import { redisSettings } from '@herald/redis';
import { brokerAuthSettings } from './auth.js';

/** Every environment variable the broker reads (docs/broker-configuration.md lists them with defaults). */
export const brokerSpec = {
  ...httpSettings(6632),
  /**
   * REDIS_URL, REDIS_SENTINELS (+ REDIS_SENTINEL_MASTER…), REDIS_CLUSTER_NODES, REDIS_USERNAME,
   * REDIS_PASSWORD, REDIS_TLS: one definition for both services, in @herald/redis
   * (`redisTopologyFrom`). None set: the in-process backend (one node, nothing survives a restart).
   */
  ...redisSettings,
  /** Prefix of every Redis key the broker writes (hash tags are added per queue). */
  BROKER_KEY_PREFIX: string({ default: 'herald:broker:' }),
  /**
   * What shares one Redis Cluster slot (docs/broker-topologies.md "Redis topologies"): each queue, or the
   * queues of one namespace (then a transaction may span them on Cluster). Changes the key names:
   * fixed for a deployment's life.
   */
  BROKER_REDIS_SLOT_GROUP: enumOf(['queue', 'namespace'] as const, { default: 'queue' }),
  /**
   * Enforce Redis Cluster's one-slot rule on any topology (scripts, MULTIs, transactions): how the
   * rule is tested on standalone Redis; always in force on Cluster.
   */
  BROKER_REDIS_ONE_SLOT: boolean({ default: false }),
  /**
   * Replicas that must hold a state-changing request's write before it is answered (Redis
   * `WAIT`; docs/broker-topologies.md, "Replica acknowledgement"). 0: answer once the primary applied it.
   */
  BROKER_MIN_REPLICAS_ACK: integer({ default: 0, min: 0, max: 100 }),
  /** How long such a request waits for them before answering 503 (the write stays applied). */
  BROKER_MIN_REPLICAS_ACK_TIMEOUT: duration({ default: 1000, min: 1 }),
  /**
   * A transaction across Redis Cluster slots whose node went away before deciding it is decided
   * by any node this long after it began (docs/broker-outbox.md, "Transactions across slots"):
   * aborted unless its commit ran. Far above the few ms its steps take.
   */
  BROKER_TRANSACTION_RECOVERY_AFTER: duration({ default: 30_000, min: 100, max: 3_600_000 }),
  DEFAULT_BATCH_SIZE: integer({ default: 1, min: 1, max: 10_000 }),
  /** Long-poll timeout (ms) when a pop asks `wait=true` without `timeout`. */
  DEFAULT_TIMEOUT: duration({ default: 30_000 }),
  /** Maintenance intervals (BullMQ job schedulers with the Redis backend). */
  BROKER_LEASE_SWEEP_INTERVAL: duration({ default: 1000, min: 50 }),
  BROKER_RETENTION_INTERVAL: duration({ default: 5000, min: 50 }),
  BROKER_STATS_INTERVAL: duration({ default: 5000, min: 50 }),
  /**
   * Request body and per-payload bounds (bytes). The defaults are Queen's effective limit: its
   * HTTP layer reads any body, but a push reaches PostgreSQL as one jsonb value, which holds at
   * most 255 MiB (docs/security.md, "Broker limits"). The maximum is V8's longest string
   * (2^29 − 24 UTF-16 units): a body is parsed from one string.
   */
  BROKER_BODY_LIMIT_BYTES: integer({ default: 256 * 1024 * 1024, min: 1024, max: 536_870_888 }),
  BROKER_MAX_PAYLOAD_BYTES: integer({ default: 256 * 1024 * 1024, min: 1, max: 536_870_888 }),
  /**
   * Bytes of request bodies over 1 MiB one node reads at once (body-budget.ts; docs/security.md,
   * "Broker limits"): a body costs the node 7–8× its size while it is handled. One larger body
   * goes alone. Pops of records over 1 MiB hold it for their answers. 0: no budget.
   */
  BROKER_BODY_BUDGET_BYTES: integer({ default: 32 * 1024 * 1024, min: 0, max: 2 ** 40 }),
  /** How long a body waits for room in that budget before its 503 (Retry-After). */
  BROKER_BODY_BUDGET_WAIT: duration({ default: 10_000, min: 1, max: 600_000 }),
  /**
   * Limits per tenant (docs/broker-api.md, "Limits per tenant"), enforced cluster-wide in Redis;
   * unset: off for every tenant without an override (the admin route sets those). The tenant is
   * the token's `sub` or the queue's namespace.
   */
  BROKER_LIMIT_TENANT: enumOf(['sub', 'namespace'] as const, { default: 'sub' }),
  /** Messages a tenant may push per second (bursts up to one second's worth). */
  BROKER_LIMIT_PUSH_RATE: integer({ min: 0, max: 1_000_000_000 }),
  /** Messages a tenant may hold leased and unacknowledged at once. */
  BROKER_LIMIT_IN_FLIGHT: integer({ min: 0, max: 1_000_000_000 }),
  /**
   * The Mercure hub the outbox relays to (docs/broker-outbox.md): its publish URL
   * (`…/.well-known/mercure`). Unset: no relay runs on this node, and configure refuses
   * `bridgeTopic` and transactions refuse `publish` operations.
   */
  BROKER_HUB_URL: url({ protocols: ['http:', 'https:'] }),
  /** The key the broker signs its publisher tokens with: the hub's MERCURE_PUBLISHER_JWT_KEY for
   * an HMAC algorithm, the PKCS#8 private key PEM matching it otherwise. */
  BROKER_HUB_JWT_KEY: string(),
  BROKER_HUB_JWT_ALG: enumOf(SUPPORTED_ALGORITHMS, { default: 'HS256', caseInsensitive: true }),
  /** Queues with their own `queue` label in /metrics; the rest share `queue="__other__"`. */
  BROKER_METRICS_MAX_QUEUES: integer({ default: 1000, min: 0, max: 100_000 }),
  /**
   * AES-256 key (64 hex characters, Queen's variable and format) for queues with
   * `encryptionEnabled`; unset: such queues are refused (docs/broker-encryption.md "Payload encryption").
   */
  QUEEN_ENCRYPTION_KEY: hexBytes(32),
  /** Retired keys, still accepted for decryption after a rotation (comma-separated). */
  QUEEN_ENCRYPTION_OLD_KEYS: hexBytesList(32),
  ...brokerAuthSettings,
} as const;

export { boolean, enumOf, list };

export type BrokerConfig = {
  readonly [K in keyof typeof brokerSpec]: ReturnType<(typeof brokerSpec)[K]['read']>;
};

/*
 * The Redis Streams backend: every role of the storage port (storage.ts), each a class in
 * redis/ over one RedisBackend (redis/context.ts: the connections, key names and scripts).
 * Every state change is one Lua script on one queue's hash slot (lua/*.lua); the few global
 * keys (queue set, partition-id index, lease index, flags, stats, traces) are written by plain
 * commands outside scripts so scripts stay single-slot. This file only builds the roles and
 * routes what the subscriber hears; no request passes through it.
 */
import { type LimitKind, TenantLimits } from '@herald/limits';
import type { Histogram } from '@herald/metrics';
import {
  type Clock,
  loggableError,
  type OutageLogger,
  onShardedMessage,
  type RedisTopology,
  type ScriptClock,
  type ScriptSet,
  subscribeSharded,
  systemClock,
} from '@herald/redis';
import { RedisCatalog } from './redis/catalog.js';
import { COMMAND_TIMEOUT_MS, RedisBackend, type SlotGroup } from './redis/context.js';
import { RedisDeadLetters } from './redis/dead-letters.js';
import { RedisFlags } from './redis/flags.js';
import { RedisGroups } from './redis/groups.js';
import { RedisHousekeeping } from './redis/housekeeping.js';
import { RedisMessages } from './redis/messages.js';
import type { Notifications } from './redis/notifications.js';
import type { RedisOutbox } from './redis/outbox.js';
import { RedisQueueStore } from './redis/queue-store.js';
import type { ReplicaAck } from './redis/replication.js';
import { RedisTraces } from './redis/traces.js';
import { loadBrokerScripts } from './scripts.js';
import type { BrokerStorage } from './storage.js';
import { RedisStreams } from './streams/redis.js';

export type { SlotGroup } from './redis/context.js';

export interface RedisStorageOptions {
  /** Standalone, Sentinel or Cluster (`@herald/redis`); on Cluster `oneSlot` is always on. */
  readonly topology: RedisTopology;
  /** Prefix of every key (`herald:broker:`); each queue's keys add a hash tag after it. */
  readonly prefix: string;
  readonly commandDuration?: Histogram<'command'>;
  /** A request's command deadline in ms (default COMMAND_TIMEOUT_MS; REDIS_COMMAND_TIMEOUT). */
  readonly commandTimeoutMs?: number;
  /** Where the node's Redis outages are logged (one line lost, one back: `OutageLog`). */
  readonly log: OutageLogger;
  /**
   * The time node-side code reads (default: the system clock). The scripts read theirs through
   * `--@include clock`: with another clock than the system's, pass `scripts` loaded on the
   * matching script clock (`loadBrokerScripts({ clock: 'key' })`, shared/redis README.md).
   */
  readonly clock?: Clock;
  /**
   * The clock the scripts read (default `redis`, Redis TIME); `key` with a test clock on a real
   * Redis (`KeyClock`: shared/redis README.md, "One clock"), for the broker's and the limits'.
   */
  readonly scriptClock?: ScriptClock;
  /** The Lua scripts (default: lua/ on `scriptClock`, `loadBrokerScripts()`). */
  readonly scripts?: ScriptSet;
  /** Each limit's default for every tenant (BROKER_LIMIT_*); absent: off. */
  readonly limits?: Partial<Record<LimitKind, number>>;
  /**
   * How long a transaction across Redis Cluster slots may stay undecided before any node's
   * recovery decides it (ms; BROKER_TRANSACTION_RECOVERY_AFTER, default 30 s).
   */
  readonly transactionDeadlineMs?: number;
  /** What shares a Redis Cluster slot (SlotGroup; default `queue`). */
  readonly slotGroup?: SlotGroup;
  /**
   * Keep every script call and MULTI in one slot, refusing a transaction across slots: on for
   * Redis Cluster; tests turn it on for standalone so the rule is checked there too.
   */
  readonly oneSlot?: boolean;
  /**
   * BROKER_MIN_REPLICAS_ACK and its timeout: state-changing requests answer once this many
   * replicas hold their write (docs/broker-topologies.md, "Replica acknowledgement"); 0 or unset: off.
   */
  readonly replicaAck?: ReplicaAck;
  /**
   * What this storage reports itself as (`/health`'s `backend`): `memory` for the embedded
   * default, which runs this same code on an in-process Redis (storage-embedded.ts).
   */
  readonly kind?: 'redis' | 'memory';
  /** How often and how long the node counts record readers (record-readers.ts; tests shorten them). */
  readonly recordReaders?: { readonly intervalMs?: number; readonly quietMs?: number };
  /** Closed after this storage's connections (the embedded default's in-process Redis). */
  readonly owns?: { close(): Promise<void> };
}

export class RedisStorage implements BrokerStorage {
  readonly kind: 'redis' | 'memory';
  readonly queues: RedisQueueStore;
  readonly catalog: RedisCatalog;
  readonly messages: RedisMessages;
  readonly deadLetters: RedisDeadLetters;
  readonly groups: RedisGroups;
  readonly traces: RedisTraces;
  readonly flags: RedisFlags;
  readonly housekeeping: RedisHousekeeping;
  readonly availability: Notifications;
  readonly streams: RedisStreams;
  readonly limits: TenantLimits;
  readonly outbox: RedisOutbox;
  private readonly backend: RedisBackend;

  constructor(private readonly options: RedisStorageOptions) {
    this.kind = options.kind ?? 'redis';
    const backend = new RedisBackend({
      topology: options.topology,
      commandTimeoutMs: options.commandTimeoutMs ?? COMMAND_TIMEOUT_MS,
      prefix: options.prefix,
      slotGroup: options.slotGroup ?? 'queue',
      oneSlot: options.oneSlot ?? false,
      replicaAck: options.replicaAck,
      commandDuration: options.commandDuration,
      log: options.log,
      clock: options.clock ?? systemClock,
      transactionDeadlineMs: options.transactionDeadlineMs ?? 30_000,
      scripts: options.scripts ?? loadBrokerScripts({ clock: options.scriptClock ?? 'redis' }),
      shared: this.kind === 'redis',
      ...(options.recordReaders ? { recordReaders: options.recordReaders } : {}),
    });
    this.backend = backend;
    this.queues = new RedisQueueStore(backend);
    this.catalog = new RedisCatalog(backend);
    this.messages = new RedisMessages(backend);
    this.deadLetters = new RedisDeadLetters(backend);
    this.groups = new RedisGroups(backend);
    this.traces = new RedisTraces(backend.redis, (...parts) => backend.key(...parts), backend.clock);
    const { control, recordReaders } = backend;
    this.flags = new RedisFlags(backend.redis, backend.key('flags'), control);
    this.housekeeping = new RedisHousekeeping(backend);
    this.availability = backend.notifications;
    this.outbox = backend.outbox;
    // One slot for the registry's two hashes where slots are enforced (docs/broker-streams.md, "Streams").
    this.streams = new RedisStreams(backend, backend.key(backend.oneSlot ? '{streams}:' : 'streams:'));
    this.limits = new TenantLimits({
      redis: backend.redis,
      prefix: options.prefix,
      defaults: options.limits ?? {},
      clock: backend.clock,
      scriptClock: options.scriptClock ?? 'redis',
      // Once per kind of round until it succeeds again, without a stack: an outage's own lines
      // (OutageLog) say what happened to Redis.
      onError: (error, what) =>
        options.log.info({ error: loggableError(error) }, `tenant limits: ${what} failed`),
    });
    const { subscriber } = backend;
    // Control messages sent while this node was away are lost: read the flags and sizes afresh.
    subscriber.on('ready', () => {
      this.flags.forget();
      backend.recordSizes.forget();
    });
    onShardedMessage(subscriber, (channel: string, message: string) => {
      if (channel === control) {
        if (!backend.registry.onControl(message) && !backend.recordSizes.onControl(message))
          this.flags.forget();
      } else if (channel !== recordReaders?.channel) {
        backend.notifications.receive(message);
      }
    });
    // Re-subscribed by ioredis after a reconnect (autoResubscribe). The record readers' channel
    // first: this node is never counted on the control channel alone (record-readers.ts).
    const subscribed = subscribeSharded(
      subscriber,
      ...(recordReaders ? [recordReaders.channel] : []),
      control,
    ).catch(() => undefined);
    recordReaders?.start(subscribed);
  }

  /** Whether pushes write message records now, or five fields for a node of an earlier release (record-readers.ts). */
  get writesRecords(): boolean {
    return this.backend.writesRecords;
  }

  /** The topology given at construction (for BullMQ connections of the maintenance module). */
  get topology(): RedisTopology {
    return this.options.topology;
  }

  async ready(): Promise<string | undefined> {
    const problem = await this.backend.ready();
    if (problem !== undefined) return problem;
    // Ready once it has counted the nodes that read message records (record-readers.ts).
    const counted = this.backend.recordReaders?.counted ?? true;
    return counted ? undefined : 'counting the broker nodes that read message records';
  }

  async close(): Promise<void> {
    await this.limits.stop();
    await this.backend.close();
    await this.options.owns?.close();
  }
}

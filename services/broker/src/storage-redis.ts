/*
 * The Redis Streams backend. Every state change is one Lua script on one queue's hash slot
 * (lua/*.lua); the few global keys (queue set, partition-id index, lease index, flags, stats,
 * traces) are written by plain commands outside scripts so scripts stay single-slot. This
 * class owns the connections and delegates; each concern lives in redis/, named as its
 * script: push.ts, pop.ts (and release), ack.ts, transaction.ts, leases.ts (extension, sweep),
 * dead-letters.ts, retention.ts, stats.ts, groups.ts (seek, delete), queues.ts (configure,
 * delete), messages.ts, traces.ts, flags.ts, notifications.ts, registry.ts.
 */
import type { Histogram } from '@herald/metrics';
import {
  type Clock,
  closeRedis,
  createRedis,
  describeTopology,
  instrumentRedis,
  OutageLog,
  type OutageLogger,
  onShardedMessage,
  probeRedis,
  type RedisClient,
  type RedisTopology,
  runScript,
  type ScriptSet,
  scriptNamed,
  subscribeSharded,
  systemClock,
} from '@herald/redis';
import { namespaceAndTask } from './identifiers.js';
import { ack } from './redis/ack.js';
import { encode, type RedisBackend, slotTag } from './redis/context.js';
import { listDeadLetters, requeueDeadLetters } from './redis/dead-letters.js';
import { RedisFlags } from './redis/flags.js';
import { deleteGroup, groupsOf, seek } from './redis/groups.js';
import { extendLease, sweepLeases } from './redis/leases.js';
import { deleteMessage, getMessage, listMessages, listQueueMessages } from './redis/messages.js';
import { Notifier, parseNotification, QueueSubscriptions } from './redis/notifications.js';
import { pop, release } from './redis/pop.js';
import { push } from './redis/push.js';
import { configure, deleteQueue, getQueue, listQueues } from './redis/queues.js';
import { RedisRegistry } from './redis/registry.js';
import { MARKER_SUFFIX, type ReplicaAck, ReplicatedWrites } from './redis/replication.js';
import { applyRetention, RETENTION_RUN_BUDGET_MS } from './redis/retention.js';
import { cachedStats, partitionStates, refreshStats } from './redis/stats.js';
import { RedisTraces } from './redis/traces.js';
import { transaction } from './redis/transaction.js';
import { loadBrokerScripts } from './scripts.js';
import type {
  AckInput,
  AckResult,
  AvailabilityListener,
  BrokerStorage,
  DeadLetter,
  LeaseExtension,
  LeaseSweep,
  MessageView,
  PartitionState,
  PopRequest,
  PopResult,
  PushItem,
  PushResult,
  QueueInfo,
  QueueMessageState,
  QueueOptions,
  QueueStats,
  SeekTarget,
  SystemFlags,
  TraceEntry,
  TraceInput,
  TransactionOperation,
  TransactionOutcome,
} from './storage.js';
import { RedisStreams } from './streams/redis.js';

export interface RedisStorageOptions {
  /** Standalone, Sentinel or Cluster (`@herald/redis`); on Cluster `oneSlot` is always on. */
  readonly topology: RedisTopology;
  /** Prefix of every key (`herald:broker:`); each queue's keys add a hash tag after it. */
  readonly prefix: string;
  readonly commandDuration?: Histogram<'command'>;
  /** Where the node's Redis outages are logged (one line lost, one back: `OutageLog`). */
  readonly log: OutageLogger;
  /**
   * The time node-side code reads (default: the system clock). The scripts read theirs through
   * `--@include clock`: with another clock than the system's, pass `scripts` loaded on the
   * matching script clock (`loadBrokerScripts({ clock: 'key' })`, shared/redis README.md).
   */
  readonly clock?: Clock;
  /** The Lua scripts (default: lua/ on Redis's clock, `loadBrokerScripts()`). */
  readonly scripts?: ScriptSet;
  /**
   * What shares a Redis Cluster slot (docs/broker-topologies.md "Redis topologies"): `queue` (default:
   * `<prefix>{<queue>}:`, queues spread over every shard) or `namespace`
   * (`<prefix>{<namespace>}:<queue>:`: the queues of one namespace share a slot, so a
   * transaction may span them on Cluster). Fixed for a deployment's life: the keys differ.
   */
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
  /** Closed after this storage's connections (the embedded default's in-process Redis). */
  readonly owns?: { close(): Promise<void> };
}

export type SlotGroup = 'queue' | 'namespace';

/**
 * The scripts of requests whose answer a client relies on (push, ack, transaction, configure,
 * the admin changes, lease extension, streams): with BROKER_MIN_REPLICAS_ACK they answer after
 * the replica barrier. Pop and release are not among them: a lease lost in a failover makes the
 * message deliverable again, as a lease expiry would; nor the maintenance scripts (sweep,
 * retention, stats), which the next run repeats.
 */
const REPLICATED_SCRIPTS = new Set([
  'push',
  'ack',
  'transaction',
  'configure',
  'delete-queue',
  'delete-message',
  'delete-group',
  'seek',
  'requeue-dlq',
  'extend-lease',
  'streams-register',
  'streams-drop',
  'streams-cycle',
]);

/** Scripts taking one key per queue they touch: their file name gives the least number. */
const KEYS_PER_QUEUE = new Set(['transaction', 'streams-cycle']);

/**
 * A request's Redis command is refused after this long without a reply (at once while the
 * connection is down), so the route answers 503 instead of hanging (docs/broker-operations.md, "Outages").
 */
export const COMMAND_TIMEOUT_MS = 1000;

export class RedisStorage implements BrokerStorage {
  readonly kind: 'redis' | 'memory';
  private readonly redis: RedisClient;
  private readonly subscriber: RedisClient;
  /**
   * With BROKER_MIN_REPLICAS_ACK: the connection of the REPLICATED_SCRIPTS, each followed by WAIT
   * on it. Its own, because WAIT blocks the connection it runs on until the replicas answer:
   * pops and reads keep theirs.
   */
  private readonly replicatedWrites: ReplicatedWrites | undefined;
  private readonly writer: RedisClient | undefined;
  private readonly oneSlot: boolean;
  private readonly scripts: ScriptSet;
  private readonly prefix: string;
  private readonly listeners = new Set<AvailabilityListener>();
  private readonly notifier: Notifier;
  /** Per-queue notification channels this node listens to (Cluster only). */
  private readonly queueSubscriptions: QueueSubscriptions | undefined;
  private readonly registry: RedisRegistry;
  private readonly systemFlags: RedisFlags;
  private readonly traces: RedisTraces;
  /** What the modules of redis/ use. */
  private readonly backend: RedisBackend;
  readonly streams: RedisStreams;

  constructor(private readonly options: RedisStorageOptions) {
    this.prefix = options.prefix;
    this.kind = options.kind ?? 'redis';
    const { topology } = options;
    this.oneSlot = topology.kind === 'cluster' || (options.oneSlot ?? false);
    this.redis = createRedis({
      topology,
      connectionName: 'herald-broker',
      commandTimeout: COMMAND_TIMEOUT_MS,
    });
    if (options.commandDuration) instrumentRedis(this.redis, options.commandDuration);
    const replicaAck = options.replicaAck;
    if (replicaAck && replicaAck.replicas > 0) {
      // A write waits for its replicas on top of its own deadline (docs/broker-operations.md, "Outages").
      this.writer = createRedis({
        topology,
        connectionName: 'herald-broker-writer',
        commandTimeout: COMMAND_TIMEOUT_MS + replicaAck.timeoutMs,
      });
      if (options.commandDuration) instrumentRedis(this.writer, options.commandDuration);
      this.replicatedWrites = new ReplicatedWrites(this.writer, replicaAck);
    }
    this.subscriber = createRedis({ topology, connectionName: 'herald-broker-notify', forSubscriber: true });
    // Outages surface through /readyz, 503s and two log lines; an unhandled 'error' event would crash.
    const outages = new OutageLog(options.log, describeTopology(topology));
    outages.watch(this.redis, 'herald-broker');
    outages.watch(this.subscriber, 'herald-broker-notify');
    if (this.writer) outages.watch(this.writer, 'herald-broker-writer');
    this.scripts = options.scripts ?? loadBrokerScripts();
    const clock = options.clock ?? systemClock;
    this.traces = new RedisTraces(this.redis, (...parts) => this.key(...parts), clock);
    this.registry = new RedisRegistry(this.redis, (...parts) => this.key(...parts));
    // docs/broker-topologies.md "Redis topologies": one channel per queue in its slot on Cluster, one for all otherwise.
    const channelOf = this.oneSlot
      ? (queue: string) => `${this.base(queue)}notify`
      : () => this.key('notify');
    this.notifier = new Notifier(this.redis, channelOf);
    this.queueSubscriptions = this.oneSlot
      ? new QueueSubscriptions(this.subscriber, channelOf, (queue) => {
          for (const listener of this.listeners) listener(queue, Number.POSITIVE_INFINITY);
        })
      : undefined;
    this.systemFlags = new RedisFlags(this.redis, this.key('flags'), this.key('control'));
    this.backend = {
      redis: this.redis,
      registry: this.registry,
      clock,
      key: (...parts) => this.key(...parts),
      base: (queue) => this.base(queue),
      run: (name, keys, args) => this.run(name, keys, args),
      oneSlot: this.oneSlot,
      notify: (queues) => this.notifier.notify(queues),
    };
    // Control messages sent while this node was away are lost: read the flags afresh.
    this.subscriber.on('ready', () => {
      this.systemFlags.forget();
    });
    this.streams = new RedisStreams({
      redis: this.redis,
      // One slot for the registry's two hashes where slots are enforced (docs/broker-streams.md, "Streams").
      registryBase: this.key(this.oneSlot ? '{streams}:' : 'streams:'),
      oneSlot: this.oneSlot,
      run: (name, keys, args) => this.run(name, keys, args),
      base: (queue) => this.base(queue),
      resolvePartition: (partitionId) => this.registry.resolve(partitionId),
      register: (queue, partitions) => this.registry.register(queue, partitions),
      notify: (queues) => this.notifier.notify(queues),
    });
    onShardedMessage(this.subscriber, (channel: string, message: string) => {
      if (channel === this.key('control')) {
        if (!this.registry.onControl(message)) this.systemFlags.forget();
        return;
      }
      const [queue, capacity] = parseNotification(message);
      for (const listener of this.listeners) listener(queue, capacity);
    });
    // Re-subscribed by ioredis after a reconnect (autoResubscribe).
    const channels = this.oneSlot ? [this.key('control')] : [this.key('notify'), this.key('control')];
    void subscribeSharded(this.subscriber, ...channels).catch(() => undefined);
  }

  /** The topology given at construction (for BullMQ connections of the maintenance module). */
  get topology(): RedisTopology {
    return this.options.topology;
  }

  private key(...parts: string[]): string {
    return this.prefix + parts.join(':');
  }

  /** `<prefix>{<queue>}:` (or `<prefix>{<namespace>}:<queue>:`): every key of one queue shares its hash tag. */
  private base(queue: string): string {
    if (this.options.slotGroup === 'namespace') {
      return `${this.prefix}{${encode(namespaceAndTask(queue).namespace)}}:${encode(queue)}:`;
    }
    return `${this.prefix}{${encode(queue)}}:`;
  }

  private run<T>(name: string, keys: string[], args: (string | number)[]): Promise<T> {
    const script = scriptNamed(this.scripts, name);
    if (this.oneSlot) {
      const tags = new Set(keys.map(slotTag));
      // A call site bug: Redis Cluster would refuse it (CROSSSLOT) or run it on the wrong shard.
      if (tags.size > 1)
        throw new Error(`script ${name}: keys in more than one slot (${[...tags].join(', ')})`);
    }
    const declared =
      KEYS_PER_QUEUE.has(name) && keys.length > script.numberOfKeys
        ? { ...script, numberOfKeys: keys.length }
        : script;
    if (this.replicatedWrites && REPLICATED_SCRIPTS.has(name)) {
      // The marker shares the first key's hash tag.
      const marker = `${keys[0]}${MARKER_SUFFIX}`;
      return this.replicatedWrites.run<T>(declared, keys, args, marker);
    }
    return runScript<T>(this.redis, declared, keys, args);
  }

  watchQueue(queue: string): () => void {
    return this.queueSubscriptions?.watch(queue) ?? (() => undefined);
  }

  onAvailable(listener: AvailabilityListener): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  async ready(): Promise<string | undefined> {
    const probe = await probeRedis(this.redis);
    return probe.ok ? undefined : probe.error;
  }

  async close(): Promise<void> {
    // Bounded even with Redis down (close.ts): QUIT only on a live connection.
    this.registry.stop();
    this.queueSubscriptions?.close();
    await Promise.all(
      [this.redis, this.subscriber, this.writer].map((client) => (client ? closeRedis(client) : undefined)),
    );
    await this.options.owns?.close();
  }

  configure(
    queue: string,
    options: Partial<QueueOptions>,
    names: { namespace: string; task: string },
  ): Promise<QueueInfo> {
    return configure(this.backend, queue, options, names);
  }

  push(items: PushItem[]): Promise<PushResult[]> {
    return push(this.backend, items);
  }

  pop(request: PopRequest): Promise<PopResult> {
    return pop(this.backend, request);
  }

  release(result: PopResult, group: string): Promise<void> {
    return release(this.backend, result, group);
  }

  ack(acks: AckInput[]): Promise<AckResult[]> {
    return ack(this.backend, acks);
  }

  transaction(operations: TransactionOperation[]): Promise<TransactionOutcome> {
    return transaction(this.backend, operations);
  }

  extendLease(leaseId: string, seconds: number): Promise<LeaseExtension> {
    return extendLease(this.backend, leaseId, seconds);
  }

  listQueues(): Promise<QueueInfo[]> {
    return listQueues(this.backend);
  }

  getQueue(queue: string): Promise<QueueInfo | undefined> {
    return getQueue(this.backend, queue);
  }

  deleteQueue(queue: string): Promise<boolean> {
    return deleteQueue(this.backend, queue);
  }

  listMessages(filter: { queue: string; partition?: string; limit: number }): Promise<MessageView[]> {
    return listMessages(this.backend, filter);
  }

  listQueueMessages(filter: { queue: string; limit: number; offset: number }): Promise<QueueMessageState[]> {
    return listQueueMessages(this.backend, filter);
  }

  getMessage(partitionId: string, transactionId: string): Promise<MessageView | undefined> {
    return getMessage(this.backend, partitionId, transactionId);
  }

  deleteMessage(partitionId: string, transactionId: string): Promise<boolean> {
    return deleteMessage(this.backend, partitionId, transactionId);
  }

  listDeadLetters(filter: {
    queue: string;
    group?: string;
    limit: number;
    offset: number;
  }): Promise<{ messages: DeadLetter[]; total: number }> {
    return listDeadLetters(this.backend, filter);
  }

  requeueDeadLetters(queue: string, dlqIds: string[]): Promise<number> {
    return requeueDeadLetters(this.backend, queue, dlqIds);
  }

  partitionStates(queue: string): Promise<PartitionState[]> {
    return partitionStates(this.backend, queue);
  }

  groupsOf(queue: string): Promise<string[]> {
    return groupsOf(this.backend, queue);
  }

  seek(queue: string, group: string, partition: string | undefined, target: SeekTarget): Promise<number> {
    return seek(this.backend, queue, group, partition, target);
  }

  deleteGroup(queue: string, group: string): Promise<boolean> {
    return deleteGroup(this.backend, queue, group);
  }

  addTrace(trace: TraceInput): Promise<TraceEntry> {
    return this.traces.add(trace);
  }

  tracesOf(partitionId: string, transactionId: string): Promise<TraceEntry[]> {
    return this.traces.ofMessage(partitionId, transactionId);
  }

  tracesByName(name: string, limit: number): Promise<TraceEntry[]> {
    return this.traces.byName(name, limit);
  }

  traceNames(limit: number): Promise<{ name: string; count: number }[]> {
    return this.traces.names(limit);
  }

  flags(): Promise<SystemFlags> {
    return this.systemFlags.get();
  }

  setFlags(flags: Partial<SystemFlags>): Promise<SystemFlags> {
    return this.systemFlags.set(flags);
  }

  sweepLeases(): Promise<LeaseSweep> {
    return sweepLeases(this.backend);
  }

  applyRetention(budgetMs = RETENTION_RUN_BUDGET_MS): Promise<number> {
    return applyRetention(this.backend, budgetMs);
  }

  refreshStats(): Promise<QueueStats[]> {
    return refreshStats(this.backend);
  }

  cachedStats(): Promise<QueueStats[]> {
    return cachedStats(this.backend);
  }
}

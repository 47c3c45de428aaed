import type { Histogram } from '@herald/metrics';
import {
  type Clock,
  closeRedis,
  commandExpecting,
  createRedis,
  describeTopology,
  instrumentRedis,
  type LuaScript,
  OutageLog,
  type OutageLogger,
  probeRedis,
  type RedisClient,
  type RedisTopology,
  runScript,
  type ScriptSet,
  scriptNamed,
} from '@herald/redis';
import { namespaceAndTask } from '../identifiers.js';
import { Notifications } from './notifications.js';
import { RedisOutbox } from './outbox.js';
import { RecordReaders } from './record-readers.js';
import { LARGE_RECORD_BYTES, RecordSizes } from './record-sizes.js';
import { RedisRegistry } from './registry.js';
import { MARKER_SUFFIX, type ReplicaAck, ReplicatedWrites } from './replication.js';

/**
 * What shares a Redis Cluster slot (docs/broker-topologies.md "Redis topologies"): `queue`
 * (`<prefix>{<queue>}:`, queues spread over every shard) or `namespace`
 * (`<prefix>{<namespace>}:<queue>:`: the queues of one namespace share a slot, so a transaction
 * may span them on Cluster). Fixed for a deployment's life: the keys differ.
 */
export type SlotGroup = 'queue' | 'namespace';

/** A script's reply as ioredis returns it. */
export type Reply = string | number | null | Reply[];

/** Partition and group names go URI-encoded into keys and script arguments (no ':' inside). */
export const encode = encodeURIComponent;
export const decode = decodeURIComponent;

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
  'txn-prepare',
  'txn-apply',
  'txn-abort',
  'txn-decide',
]);

/**
 * Scripts taking more keys than their file name says, which gives the least number: one per queue
 * they touch, or (pop) the lease index where every key lives on one server.
 */
const EXTRA_KEYS = new Set(['transaction', 'streams-cycle', 'txn-prepare', 'txn-apply', 'txn-abort', 'pop']);

/**
 * By default a request's Redis command is refused after this long without a reply (at once while
 * the connection is down), so the route answers 503 instead of hanging (docs/broker-operations.md,
 * "Outages"); REDIS_COMMAND_TIMEOUT changes it. About 30× the longest stall measured while Redis
 * forks and rewrites its files (docs/benchmarks.md, "Redis command deadline").
 */
export const COMMAND_TIMEOUT_MS = 1000;

export interface RedisBackendOptions {
  readonly topology: RedisTopology;
  /** A request's command deadline (ms; COMMAND_TIMEOUT_MS unless REDIS_COMMAND_TIMEOUT says otherwise). */
  readonly commandTimeoutMs: number;
  /** Prefix of every key (`herald:broker:`). */
  readonly prefix: string;
  readonly slotGroup: SlotGroup;
  /** See RedisBackend.oneSlot; always on for Redis Cluster. */
  readonly oneSlot: boolean;
  readonly replicaAck: ReplicaAck | undefined;
  readonly commandDuration: Histogram<'command'> | undefined;
  readonly log: OutageLogger;
  readonly clock: Clock;
  /** How long a transaction across slots may stay undecided before recovery decides it (ms). */
  readonly transactionDeadlineMs: number;
  readonly scripts: ScriptSet;
  /**
   * Whether other broker nodes, maybe of an earlier release, can share this Redis: false for
   * the embedded default (the process's own), where pushes always write message records.
   */
  readonly shared: boolean;
  /** How often and how long record-readers.ts counts (tests shorten them). */
  readonly recordReaders?: { readonly intervalMs?: number; readonly quietMs?: number };
}

/**
 * What every role of the Redis backend works with: the connections, key names, the scripts and
 * the availability channel. A role's class (queue-store.ts, catalog.ts, …) takes one and calls
 * Redis through it; nothing here knows a queue rule.
 */
export class RedisBackend {
  /** The command connection. */
  readonly redis: RedisClient;
  /** Pub/sub: notifications and the control channel. */
  readonly subscriber: RedisClient;
  /**
   * With BROKER_MIN_REPLICAS_ACK: the connection of the REPLICATED_SCRIPTS, each followed by WAIT
   * on it. Its own, because WAIT blocks the connection it runs on until the replicas answer:
   * pops and reads keep theirs.
   */
  private readonly writer: RedisClient | undefined;
  private readonly replicatedWrites: ReplicatedWrites | undefined;
  /** The global registrations: queue set and partition-id index (registry.ts). */
  readonly registry: RedisRegistry;
  /** The time node-side code reads; the scripts read the same one (RedisStorageOptions.clock). */
  readonly clock: Clock;
  /** See RedisBackendOptions.transactionDeadlineMs. */
  readonly transactionDeadlineMs: number;
  /**
   * Every script call and MULTI must stay in one hash slot: true on Redis Cluster (and where a
   * test asks for it on standalone, so the rule is checked on every topology).
   */
  readonly oneSlot: boolean;
  /** "Work may be available" for a queue, to every node's parked pops. */
  readonly notifications: Notifications;
  /** The outboxes (outbox.ts): the data path tells it when a script recorded intents. */
  readonly outbox: RedisOutbox;
  /** The control channel every node subscribes to (storage-redis.ts). */
  readonly control: string;
  /**
   * Whether pushes write message records, or the five fields while a broker node of an earlier
   * release is connected (record-readers.ts); undefined: always records (the embedded default).
   */
  readonly recordReaders: RecordReaders | undefined;
  /** The largest record each queue may hold: its scripts' command deadline allows for it. */
  readonly recordSizes: RecordSizes;
  private readonly prefix: string;
  readonly slotGroup: SlotGroup;
  private readonly scripts: ScriptSet;

  constructor(options: RedisBackendOptions) {
    const { topology, commandDuration } = options;
    this.prefix = options.prefix;
    this.slotGroup = options.slotGroup;
    this.scripts = options.scripts;
    this.clock = options.clock;
    this.transactionDeadlineMs = options.transactionDeadlineMs;
    this.oneSlot = topology.kind === 'cluster' || options.oneSlot;
    const commandTimeout = options.commandTimeoutMs;
    this.redis = createRedis({ topology, connectionName: 'herald-broker', commandTimeout });
    if (commandDuration) instrumentRedis(this.redis, commandDuration);
    const replicaAck = options.replicaAck;
    if (replicaAck && replicaAck.replicas > 0) {
      // A write waits for its replicas on top of its own deadline (docs/broker-operations.md, "Outages").
      this.writer = createRedis({
        topology,
        connectionName: 'herald-broker-writer',
        commandTimeout: commandTimeout + replicaAck.timeoutMs,
      });
      if (commandDuration) instrumentRedis(this.writer, commandDuration);
      this.replicatedWrites = new ReplicatedWrites(this.writer, replicaAck);
    }
    this.subscriber = createRedis({ topology, connectionName: 'herald-broker-notify', forSubscriber: true });
    // Outages surface through /readyz, 503s and two log lines; an unhandled 'error' event would crash.
    const outages = new OutageLog(options.log, describeTopology(topology));
    outages.watch(this.redis, 'herald-broker');
    outages.watch(this.subscriber, 'herald-broker-notify');
    if (this.writer) outages.watch(this.writer, 'herald-broker-writer');
    this.registry = new RedisRegistry(this.redis, (...parts) => this.key(...parts));
    this.control = this.key('control');
    this.recordReaders = options.shared
      ? new RecordReaders({
          redis: this.redis,
          control: this.control,
          // In the control channel's slot: its tag, or the whole name made one.
          channel: `${slotTag(this.control) === this.control ? `{${this.control}}` : this.control}:record-readers`,
          clock: this.clock,
          log: options.log,
          ...options.recordReaders,
        })
      : undefined;
    this.recordSizes = new RecordSizes(this.redis, this.key('sizes'), this.control, slotTag);
    this.outbox = new RedisOutbox(this);
    // docs/broker-topologies.md "Redis topologies": one channel per queue in its slot on Cluster, one for all otherwise.
    this.notifications = new Notifications(
      this.redis,
      this.subscriber,
      this.oneSlot ? (queue) => `${this.base(queue)}notify` : this.key('notify'),
    );
  }

  /**
   * Whether pushes write message records and ack batches answer records now (false: the five
   * fields, a field per ack; record-readers.ts).
   */
  get writesRecords(): boolean {
    return this.recordReaders?.open ?? true;
  }

  /** A global key: `<prefix><parts joined by ':'>`. */
  key(...parts: string[]): string {
    return this.prefix + parts.join(':');
  }

  /** `<prefix>{<queue>}:` (or `<prefix>{<namespace>}:<queue>:`): every key of one queue shares its hash tag. */
  base(queue: string): string {
    if (this.slotGroup === 'namespace') {
      return `${this.prefix}{${encode(namespaceAndTask(queue).namespace)}}:${encode(queue)}:`;
    }
    return `${this.prefix}{${encode(queue)}}:`;
  }

  /**
   * Runs a script of lua/ by name (loaded once, called by SHA). With `oneSlot`, its keys must
   * share one hash tag (an error otherwise: a call site bug, as Cluster would answer CROSSSLOT).
   */
  run<T = Reply>(name: string, keys: string[], args: (string | number)[]): Promise<T> {
    const script = scriptNamed(this.scripts, name);
    if (this.oneSlot) {
      const tags = new Set(keys.map(slotTag));
      // A call site bug: Redis Cluster would refuse it (CROSSSLOT) or run it on the wrong shard.
      if (tags.size > 1)
        throw new Error(`script ${name}: keys in more than one slot (${[...tags].join(', ')})`);
    }
    const declared =
      EXTRA_KEYS.has(name) && keys.length > script.numberOfKeys
        ? { ...script, numberOfKeys: keys.length }
        : script;
    const replyBytes = this.recordSizes.allowance(keys, largestString(args));
    if (typeof replyBytes === 'number') return this.send<T>(name, declared, keys, args, replyBytes);
    return replyBytes.then((bytes) => this.send<T>(name, declared, keys, args, bytes));
  }

  /**
   * A plain read of `key` (an XRANGE of one entry) whose deadline allows for the largest record
   * its queue may hold, as a script's does.
   */
  async read<T>(key: string, command: string, args: (string | number)[]): Promise<T> {
    const replyBytes = await this.recordSizes.allowance([key], 0);
    return (await this.redis.sendCommand(commandExpecting(command, [key, ...args], replyBytes))) as T;
  }

  private send<T>(
    name: string,
    script: LuaScript,
    keys: string[],
    args: (string | number)[],
    replyBytes: number,
  ): Promise<T> {
    if (this.replicatedWrites && REPLICATED_SCRIPTS.has(name)) {
      // The marker shares the first key's hash tag.
      const marker = `${keys[0]}${MARKER_SUFFIX}`;
      return this.replicatedWrites.run<T>(script, keys, args, marker, replyBytes);
    }
    return runScript<T>(this.redis, script, keys, args, replyBytes);
  }

  async ready(): Promise<string | undefined> {
    const probe = await probeRedis(this.redis);
    return probe.ok ? undefined : probe.error;
  }

  async close(): Promise<void> {
    // Bounded even with Redis down (close.ts): QUIT only on a live connection.
    this.registry.stop();
    this.recordReaders?.stop();
    this.notifications.close();
    await Promise.all(
      [this.redis, this.subscriber, this.writer].map((client) => (client ? closeRedis(client) : undefined)),
    );
  }
}

/** The size in bytes of the largest string argument, when it may reach LARGE_RECORD_BYTES (else less). */
function largestString(args: readonly (string | number)[]): number {
  let largest = 0;
  for (const argument of args) {
    if (typeof argument !== 'string' || argument.length <= largest) continue;
    // UTF-8 takes up to 3 bytes per UTF-16 unit: count only where it may matter.
    largest = argument.length * 3 < LARGE_RECORD_BYTES ? argument.length : Buffer.byteLength(argument);
  }
  return largest;
}

/**
 * The text Redis Cluster hashes a key by (its slot): the first `{…}` when not empty, else the
 * whole key (cluster specification, "hash tags").
 */
export function slotTag(key: string): string {
  const open = key.indexOf('{');
  if (open === -1) return key;
  const close = key.indexOf('}', open + 1);
  if (close === -1 || close === open + 1) return key;
  return key.slice(open + 1, close);
}

import { randomUUID } from 'node:crypto';
import { EventEmitter } from 'node:events';
import { fileURLToPath } from 'node:url';
import type { Metrics } from '@herald/metrics';
import {
  asRedisUnavailable,
  type Clock,
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
  type RedisClient,
  type RedisTopology,
  replyWithin,
  runScript,
  type ScriptSet,
  scriptNamed,
  systemClock,
} from '@herald/redis';
import { TransportUnavailableError } from './errors.js';
import { partitionOfTopic, RESUME_WINDOW } from './partitions.js';
import { PartitionsRecord } from './partitions-record.js';
import { RedisClock } from './redis-clock.js';
import type {
  Published,
  SubscriptionRecord,
  Transport,
  TransportEvents,
  TransportLog,
  UpdateListener,
} from './transport.js';
import { DEFAULT_PROBE_INTERVAL, RedisFanout } from './transport-redis-fanout.js';
import {
  compareMerged,
  decodeEntry,
  readMerged,
  readNewestEntry,
  type StreamEntry,
} from './transport-redis-history.js';
import { type PartitionKeys, RedisPublisher } from './transport-redis-publish.js';
import { RedisSubscriptionRegistry } from './transport-redis-registry.js';
import { type Cursor, decodeUpdate, type Position, type StoredUpdate, type Update } from './update.js';

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
/** At most one warning per node in this time that Redis refused publishes because it is full. */
const FULL_WARNING_INTERVAL_MS = 60_000;
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
  /** Bound of each partition's history (entries). */
  readonly historySize: number;
  readonly historyTtl: number;
  /** Topic partitions (MERCURE_PARTITIONS, default 1; docs/hub.md, topic partitions). */
  readonly partitions?: number;
  /** The process registry: Redis command durations are recorded there. */
  readonly metrics: Metrics;
  /** Deadline of the reads a request waits for (ms; default READ_TIMEOUT, REDIS_COMMAND_TIMEOUT). */
  readonly readTimeout?: number;
  /** Maintain the cluster-wide active subscriptions registry with a lease per node. */
  readonly subscriptions: boolean;
  readonly subscriptionsLease: number;
  /**
   * The clock of the registry's node leases and of the partitions record's checks (default: the
   * system clock; hub.ts `clock`).
   */
  readonly clock?: Clock;
  /** Interval between end-to-end pub/sub probes while healthy (default 5 s). */
  readonly probeInterval?: number;
  /** A probe not back within this bound marks the pub/sub path unverified (default 2 s). */
  readonly probeTimeout?: number;
  readonly log?: TransportLog;
}

/** The topology the transport connects to: standalone, Sentinel or Cluster (docs/hub.md, Redis topologies). */
function serverTopology(options: RedisTransportOptions): RedisTopology {
  const topology =
    options.topology ?? (options.url === undefined ? undefined : parseRedisOptions(options.url).topology);
  if (!topology) throw new Error('RedisTransport: a topology or a url is required');
  return topology;
}

/**
 * Redis backend. History is one stream per topic partition; publishing is one Lua script per
 * partition of the update's topics (XADD + PUBLISH with the position stamped in the message,
 * transport-redis-publish.ts); each node subscribes to the partitions its subscribers need and fans
 * out locally (transport-redis-fanout.ts); the active subscriptions registry lives beside it
 * (transport-redis-registry.ts). This class owns the connections and answers history reads.
 *
 * The same code runs on every topology (docs/hub.md, Redis topologies): Sentinel is the
 * standalone path over a connection that follows the primary; on Redis Cluster each partition's
 * keys and channel share one slot, the scripts SPUBLISH, nodes SSUBSCRIBE (one connection per
 * shard) and probe every shard they listen on, and the registry lives in the `{hub}` slot.
 */
export class RedisTransport implements Transport {
  readonly kind = 'redis' as const;
  readonly partitions: number;
  readonly events = new EventEmitter<TransportEvents>();
  readonly nodeId = randomUUID();
  /** Background work that may wait out an outage: registry writes, the fan-out's catch-up reads. */
  private readonly command: RedisClient;
  /**
   * Reads a request waits for (history, the registry, the cursor lookup) go through their own
   * deadline connection (`commandTimeout`): refused at once while Redis is away and after
   * READ_TIMEOUT (REDIS_COMMAND_TIMEOUT) when it stalls, so the request answers 503 instead of hanging.
   */
  private readonly reader: RedisClient;
  /**
   * Publishes (and the probe) go through their own fail-fast connection: while Redis is away a
   * publish fails at once instead of waiting in ioredis's offline queue, and a publish in flight
   * when the connection drops is failed, not resent later (docs/hub.md, resent publishes).
   */
  private readonly publisher: RedisClient;
  private readonly subscriber: RedisClient;
  private readonly clock: RedisClock;
  private readonly outages: OutageLog;
  private readonly scripts: ScriptSet;
  /** Each partition's keys and channel (index = partition). */
  private readonly partitionKeys: readonly PartitionKeys[];
  private readonly histories: readonly string[];
  private readonly fanout: RedisFanout;
  private readonly publishes: RedisPublisher;
  /** When this node last warned that Redis refused a publish because it is full. */
  private fullWarnedAt = Number.NEGATIVE_INFINITY;
  private readonly registry: RedisSubscriptionRegistry;
  private readonly partitionsRecord: PartitionsRecord;

  constructor(private readonly options: RedisTransportOptions) {
    const space = keyspace(`${options.prefix}${hashTag('hub')}:`);
    this.partitions = options.partitions ?? 1;
    // Partition 0 keeps the names of the unpartitioned layout; each other has its own hash tag.
    const partitionSpaces = Array.from({ length: this.partitions }, (_, partition) =>
      partition === 0 ? space : keyspace(`${options.prefix}${hashTag(`hub:${partition}`)}:`),
    );
    this.partitionKeys = partitionSpaces.map((partitionSpace) => {
      return {
        history: partitionSpace.key('history'),
        historyIds: partitionSpace.key('history-ids'),
        historyIdsByTime: partitionSpace.key('history-ids-by-time'),
        channel: partitionSpace.key('updates'),
      };
    });
    this.histories = this.partitionKeys.map((keys) => keys.history);
    this.scripts = loadScripts(LUA_DIRECTORY);
    const topology = serverTopology(options);
    this.command = createRedis({ topology, connectionName: 'herald-hub-command' });
    this.reader = createRedis({
      topology,
      connectionName: 'herald-hub-reader',
      commandTimeout: options.readTimeout ?? READ_TIMEOUT,
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
    this.fanout = new RedisFanout(
      {
        subscriber: this.subscriber,
        publisher: this.publisher,
        command: this.command,
        clock: this.clock,
        outages: this.outages,
        histories: this.histories,
        channels: this.partitionKeys.map((keys) => keys.channel),
        // Partition 0's is the node's own channel (`P{hub}:probe:<node>`); the others share their
        // partition's slot, for the per-shard probes on a Cluster.
        probeChannels: partitionSpaces.map((partitionSpace) => partitionSpace.key('probe', this.nodeId)),
        decode: (position, text, partition) =>
          this.withTopicPartitions(decodeUpdate(position, text, partition)),
        events: this.events,
        log,
        ...(options.probeInterval !== undefined ? { probeInterval: options.probeInterval } : {}),
        ...(options.probeTimeout !== undefined ? { probeTimeout: options.probeTimeout } : {}),
      },
      // One partition: every node listens to it, subscribers or not (the unpartitioned behaviour).
      this.partitions === 1 ? [0] : [],
    );
    this.publishes = new RedisPublisher({
      publisher: this.publisher,
      clock: this.clock,
      script: this.script('publish'),
      partitions: this.partitionKeys,
      historySize: options.historySize,
      historyTtl: options.historyTtl,
    });
    this.partitionsRecord = new PartitionsRecord(
      this.command,
      space.key('partitions'),
      this.partitions,
      log,
      options.clock ?? systemClock,
    );
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
      clock: options.clock ?? systemClock,
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

  get lastDispatchedPosition(): Cursor {
    return this.fanout.lastDispatchedPosition;
  }

  get fanoutMessagesReceived(): number {
    return this.fanout.messagesReceived;
  }

  watch(partitions: readonly number[] | undefined): void {
    if (this.partitions > 1) this.fanout.watch(partitions);
  }

  unwatch(partitions: readonly number[] | undefined): void {
    if (this.partitions > 1) this.fanout.unwatch(partitions);
  }

  /** Adds the partition of each topic when the update's topics span several (partitions.ts, takesCopy). */
  private withTopicPartitions(update: StoredUpdate): StoredUpdate {
    if (this.partitions === 1 || update.topics.length < 2) return update;
    const topicPartitions = update.topics.map((topic) => partitionOfTopic(topic, this.partitions));
    return topicPartitions.every((partition) => partition === topicPartitions[0])
      ? update
      : { ...update, topicPartitions };
  }

  private decodeEntry(entry: StreamEntry, partition: number): StoredUpdate {
    return this.withTopicPartitions(decodeEntry(entry, partition));
  }

  private allPartitions(): number[] {
    return Array.from({ length: this.partitions }, (_, partition) => partition);
  }

  async start(listener: UpdateListener): Promise<void> {
    const { verified } = await this.fanout.start(listener);
    if (this.options.subscriptions) this.registry.start();
    this.partitionsRecord.start(this.options.probeInterval ?? DEFAULT_PROBE_INTERVAL);
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
      if (asRedisUnavailable(error)?.reason !== 'full') {
        this.log('error', 'publish failed', { error: loggableError(error) });
      } else if (performance.now() - this.fullWarnedAt >= FULL_WARNING_INTERVAL_MS) {
        // A full Redis refuses every publish until memory is freed: said once a minute.
        this.fullWarnedAt = performance.now();
        this.log('warn', 'Redis is full (maxmemory): publishes are refused until memory is freed', {
          error: loggableError(error),
        });
      }
      throw new TransportUnavailableError('publish failed', { cause: error });
    }
  }

  /**
   * One partition: the entry's position. Several: the id is looked up in every partition, and
   * every partition resumes from RESUME_WINDOW before its earliest copy (docs/hub.md,
   * Last-Event-ID across partitions).
   */
  async findPosition(eventId: string): Promise<Cursor | undefined> {
    const copies = await unavailableAsTyped(
      Promise.all(
        this.partitionKeys.map((keys) =>
          runScript<string | null>(
            this.reader,
            this.script('find'),
            [keys.historyIds, keys.history],
            [eventId],
          ),
        ),
      ),
    );
    const found = copies.filter((position): position is Position => position !== null);
    if (found.length === 0) return undefined;
    if (this.partitions === 1) return [found[0] as Position];
    const earliest = Math.min(...found.map((position) => Number(position.slice(0, position.indexOf('-')))));
    return Array.from({ length: this.partitions }, () => `${earliest - RESUME_WINDOW}-0`);
  }

  async readHistory(
    after: Cursor | undefined,
    upTo: Cursor,
    limit: number,
    partitions?: readonly number[],
  ): Promise<StoredUpdate[]> {
    return unavailableAsTyped(
      readMerged(this.reader, {
        histories: this.histories,
        partitions: partitions ?? this.allPartitions(),
        after,
        upTo,
        limit,
        decode: (entry, partition) => this.decodeEntry(entry, partition),
      }),
    );
  }

  async lastEventId(): Promise<string | undefined> {
    const newest = await unavailableAsTyped(
      Promise.all(this.histories.map((history) => readNewestEntry(this.reader, history))),
    );
    const copies = newest.flatMap((entry, partition) => (entry ? [this.decodeEntry(entry, partition)] : []));
    return copies.sort(compareMerged).at(-1)?.id;
  }

  /** Scraped by /metrics: answers (or fails) within READ_TIMEOUT even while Redis is down. */
  async historyLength(): Promise<number> {
    const lengths = await unavailableAsTyped(
      Promise.all(this.histories.map((history) => this.reader.xlen(history))),
    );
    return lengths.reduce((total, length) => total + length, 0);
  }

  async readiness(): Promise<string | undefined> {
    if (this.command.status !== 'ready') return `Redis connection ${this.command.status}`;
    if (this.publisher.status !== 'ready') return `Redis connection ${this.publisher.status} (publisher)`;
    if (this.reader.status !== 'ready') return `Redis connection ${this.reader.status} (reader)`;
    if (!this.fanout.verified) return 'pub/sub path not verified (probe pending or failed)';
    return this.partitionsRecord.problem;
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
    this.partitionsRecord.stop();
    await this.registry.stop();
    this.subscriber.disconnect();
    await Promise.all(
      [this.command, this.publisher, this.reader].map((connection) => closeRedis(connection, CLOSE_TIMEOUT)),
    );
  }
}

import { randomUUID } from 'node:crypto';
import type { EventEmitter } from 'node:events';
import {
  isCluster,
  loggableError,
  type OutageLog,
  onShardedMessage,
  publishSharded,
  type RedisClient,
  replyWithin,
  subscribeSharded,
  unsubscribeSharded,
} from '@herald/redis';
import { RESUME_WINDOW } from './partitions.js';
import type { RedisClock } from './redis-clock.js';
import type { TransportEvents, TransportLog, UpdateListener } from './transport.js';
import { readMerged, readNewestEntry, type StreamEntry } from './transport-redis-history.js';
import {
  type Cursor,
  comparePositions,
  ORIGIN_POSITION,
  type Position,
  type StoredUpdate,
} from './update.js';

const PROBE_PREFIX = 'probe\n';

/** Interval between end-to-end pub/sub probes while healthy (ms), unless the options say otherwise. */
export const DEFAULT_PROBE_INTERVAL = 5000;
const HISTORY_PAGE = 1000;
/** Live messages held while a gap is being filled; beyond it the fill starts over. */
const RECOVERY_BUFFER_LIMIT = 100_000;
/** Bound on reading the history tail at start, while Redis may be unreachable. */
const TAIL_TIMEOUT = 2000;
/** The largest sequence of a stream id: `<ms - 1>-MAX_SEQUENCE` is just before every id of `ms`. */
const MAX_SEQUENCE = '18446744073709551615';

/** A partition being joined: its live messages wait here until its history is read. */
interface Join {
  buffer: string[];
  overflowed: boolean;
}

export interface RedisFanoutOptions {
  /**
   * The node's own subscriber connection (SUBSCRIBE mode); on Redis Cluster a Cluster client with
   * sharded subscribers (SSUBSCRIBE, one connection per shard).
   */
  readonly subscriber: RedisClient;
  /** Publishes the probes: the fail-fast publish connection, so a probe fails while it is down. */
  readonly publisher: RedisClient;
  /** Reads the history to fill gaps. */
  readonly command: RedisClient;
  readonly clock: RedisClock;
  readonly outages: OutageLog;
  /** Each partition's history stream and channel (index = partition). */
  readonly histories: readonly string[];
  readonly channels: readonly string[];
  /**
   * This node's probe channel in each partition's slot (index = partition). The one of partition
   * 0 is always subscribed and probed; on Redis Cluster the one of every watched partition too,
   * so each shard connection the node listens on is verified end to end.
   */
  readonly probeChannels: readonly string[];
  /** Decodes an entry or a message of a partition (the transport adds what it knows of the topics). */
  readonly decode: (position: Position, text: string, partition: number) => StoredUpdate;
  readonly events: EventEmitter<TransportEvents>;
  readonly log: TransportLog;
  /** Interval between end-to-end pub/sub probes while healthy (default 5 s). */
  readonly probeInterval?: number;
  /** A probe not back within this bound marks the pub/sub path unverified (default 2 s). */
  readonly probeTimeout?: number;
}

/**
 * The receiving side of the Redis transport: one subscriber connection per node (on Redis Cluster
 * one per shard, SSUBSCRIBE), subscribed to the channels of the partitions the node's subscribers
 * need (docs/hub.md, which partitions a node listens to), fanned out locally.
 *
 * Delivery invariant: within each partition the listener sees positions strictly increasing. After
 * any (re)subscription the node buffers live messages of every partition, verifies the path end to
 * end with a probe, reads the history after the last position it dispatched, every partition
 * merged by time, then flushes the buffer; duplicates are dropped by position. So a Redis restart
 * or failover costs latency, never an update within the history bounds, and no partition trails
 * another on this node by more than their transit times (the resume window rests on it). On a
 * Cluster the loss of one shard's subscriber connection puts the whole node in recovery, as the
 * loss of the one connection does elsewhere.
 */
export class RedisFanout {
  private listener: UpdateListener | undefined;
  /** Per partition: the last position dispatched (ORIGIN while not watched). */
  private readonly lastPositions: Position[];
  /** Per partition: how many watchers need it; its channel is subscribed while above 0. */
  private readonly watchers: number[];
  private readonly partitionOfChannel = new Map<string, number>();
  private readonly joins = new Map<number, Join>();
  /** Partitions watched from the start (their tail is the baseline); the others join later. */
  private readonly initiallyWatched: readonly number[];
  private recovering = true;
  private recoveryBuffer: [number, string][] = [];
  private recoveryBufferOverflowed = false;
  private needsGapFill = true;
  private verifiedPath = false;
  private subscriberReadyCount = 0;
  private readonly pendingProbes = new Map<string, () => void>();
  private probeTimer: NodeJS.Timeout | undefined;
  private probing = false;
  private firstVerification: (() => void) | undefined;
  private stopped = false;
  /** The history tail could not be read at start: the first recovery reads it instead of filling. */
  private baselineUnknown = false;
  /** Redis Cluster: sharded pub/sub, a probe per watched partition. */
  private readonly sharded: boolean;
  /** A shard subscriber connection was lost since the shards were last all subscribed (Cluster). */
  private shardLost = false;
  private readonly probeChannelSet: ReadonlySet<string>;
  /** Update messages received on the partitions' channels (probes not counted): the node's ingest. */
  private received = 0;

  constructor(
    private readonly options: RedisFanoutOptions,
    alwaysWatched: readonly number[],
  ) {
    const count = options.channels.length;
    this.lastPositions = Array.from({ length: count }, () => ORIGIN_POSITION);
    this.watchers = Array.from({ length: count }, () => 0);
    for (const [partition, channel] of options.channels.entries())
      this.partitionOfChannel.set(channel, partition);
    for (const partition of alwaysWatched) this.watchers[partition] = 1;
    this.initiallyWatched = alwaysWatched;
    this.sharded = isCluster(options.subscriber);
    this.probeChannelSet = new Set(options.probeChannels);
  }

  /**
   * The channels subscribed for a watched partition: its fan-out channel, and on a Cluster its probe
   * channel (same slot, so the same shard connection); partition 0's probe channel is always on.
   */
  private channelsOf(partition: number): string[] {
    const { channels, probeChannels } = this.options;
    const fanout = channels[partition] as string;
    return this.sharded && partition !== 0 ? [fanout, probeChannels[partition] as string] : [fanout];
  }

  /** The partitions probed each round: 0 (the node's own channel), and on a Cluster every watched one. */
  private probedPartitions(): number[] {
    return this.sharded ? [...new Set([0, ...this.watched()])] : [0];
  }

  get messagesReceived(): number {
    return this.received;
  }

  get lastDispatchedPosition(): Cursor {
    return [...this.lastPositions];
  }

  private watched(): number[] {
    return this.watchers.flatMap((count, partition) => (count > 0 ? [partition] : []));
  }

  /** Starts listening to these partitions (undefined: all); synchronous (see Transport.watch). */
  watch(partitions: readonly number[] | undefined): void {
    for (const partition of partitions ?? this.watchers.keys()) {
      this.watchers[partition] = (this.watchers[partition] as number) + 1;
      if (this.watchers[partition] === 1) this.join(partition);
    }
  }

  unwatch(partitions: readonly number[] | undefined): void {
    for (const partition of partitions ?? this.watchers.keys()) {
      this.watchers[partition] = Math.max(0, (this.watchers[partition] as number) - 1);
      if (this.watchers[partition] !== 0) continue;
      this.joins.delete(partition);
      this.lastPositions[partition] = ORIGIN_POSITION;
      unsubscribeSharded(this.options.subscriber, ...this.channelsOf(partition)).catch(() => undefined);
    }
  }

  /**
   * A partition newly needed: its baseline is Redis time now (a lower bound), so whatever is
   * published from now on is read from history or received live, merged by position.
   */
  private join(partition: number): void {
    const { clock, subscriber } = this.options;
    // Clock unknown (Redis unreachable): the node's own, less the window the resume allows for skew.
    const now = clock.deadline(0) ?? Date.now() - RESUME_WINDOW;
    this.lastPositions[partition] = `${now - 1}-${MAX_SEQUENCE}`;
    const join: Join = { buffer: [], overflowed: false };
    this.joins.set(partition, join);
    subscribeSharded(subscriber, ...this.channelsOf(partition))
      .then(() => this.fillJoin(partition, join))
      .catch((error: unknown) => {
        if (this.joins.get(partition) !== join) return;
        // The node-wide recovery reads this partition from its baseline instead.
        this.joins.delete(partition);
        this.recovering = true;
        this.needsGapFill = true;
        if (!this.options.outages.down)
          this.options.log('warn', 'joining a partition failed; recovering', { error: loggableError(error) });
      });
  }

  private async fillJoin(partition: number, join: Join): Promise<void> {
    for (;;) {
      join.buffer = [];
      join.overflowed = false;
      await this.readAndDeliver([partition]);
      if (this.joins.get(partition) !== join) return;
      if (!join.overflowed) break;
    }
    this.joins.delete(partition);
    for (const message of join.buffer) {
      if (this.recovering) this.recoveryBuffer.push([partition, message]);
      else this.deliverMessage(partition, message);
    }
  }

  /** True while the last end-to-end probe came back in time. */
  get verified(): boolean {
    return this.verifiedPath;
  }

  /**
   * Subscribes and starts probing. `verified` settles once the pub/sub path is first verified
   * (wrapped: an async function would otherwise wait for it).
   */
  async start(listener: UpdateListener): Promise<{ readonly verified: Promise<void> }> {
    const { subscriber, command, histories, probeChannels } = this.options;
    this.listener = listener;
    // Connected before start() (the node awaited other work first): that was the first connect,
    // so the next 'ready' is a reconnect and is reported as one.
    if (subscriber.status === 'ready') this.subscriberReadyCount += 1;
    subscriber.on('ready', () => this.onSubscriptionEstablished());
    subscriber.on('close', () => this.onSubscriptionLost());
    onShardedMessage(subscriber, (channel, message) => this.onMessage(channel, message));
    if (this.sharded) {
      // A shard's subscriber connection ended (its primary died or was failed over): ioredis
      // replaces it and subscribes again, then says 'subscribersReady'. Messages of that shard in
      // between are lost: the node recovers as after any lost subscription. ('-node' without a
      // node key comes from the command connections, not a subscriber.)
      subscriber.on('-node', (_redis: unknown, nodeKey?: string) => {
        if (nodeKey === undefined || this.stopped) return;
        this.shardLost = true;
        this.onSubscriptionLost();
        this.scheduleProbe(Math.min(500, this.options.probeInterval ?? DEFAULT_PROBE_INTERVAL));
      });
      subscriber.on('subscribersReady', () => {
        if (!this.shardLost) return;
        this.shardLost = false;
        this.onSubscriptionEstablished();
      });
    }
    // The baseline position is read before subscribing, so the first gap fill covers whatever is
    // published between this read and the subscription becoming active.
    const verified = new Promise<void>((resolve) => {
      this.firstVerification = resolve;
    });
    try {
      for (const partition of this.initiallyWatched) {
        const history = histories[partition] as string;
        const newest = await replyWithin(readNewestEntry(command, history), TAIL_TIMEOUT, 'XREVRANGE');
        if (newest) this.lastPositions[partition] = newest[0];
      }
    } catch (error) {
      this.baselineUnknown = true;
      this.options.log('warn', 'could not read the history tail at start; Redis unreachable?', {
        error: loggableError(error),
      });
    }
    // Not awaited: while Redis is down the command waits in the offline queue, and the node must
    // still start (alive, not ready) and keep probing.
    const initialChannels = this.initiallyWatched.flatMap((partition) => this.channelsOf(partition));
    subscribeSharded(subscriber, probeChannels[0] as string, ...initialChannels).catch(() => undefined);
    if (subscriber.status === 'ready') this.scheduleProbe(0);
    return { verified };
  }

  private onSubscriptionLost(): void {
    if (this.stopped) return;
    this.recovering = true;
    this.needsGapFill = true;
    this.setVerified(false);
  }

  private onSubscriptionEstablished(): void {
    if (this.stopped) return;
    this.subscriberReadyCount += 1;
    if (this.subscriberReadyCount > 1) {
      this.options.events.emit('fanout-reconnected');
      this.options.log('warn', 'fan-out subscription re-established; filling the gap from history', {
        after: this.lastPositions,
      });
    }
    this.recovering = true;
    this.needsGapFill = true;
    this.setVerified(false);
    this.scheduleProbe(0);
  }

  private setVerified(verified: boolean): void {
    this.verifiedPath = verified;
    this.options.events.emit('fanout-verified', verified);
    if (verified && this.firstVerification) {
      this.firstVerification();
      this.firstVerification = undefined;
    }
  }

  private onMessage(channel: string, message: string): void {
    if (this.probeChannelSet.has(channel)) {
      if (message.startsWith(PROBE_PREFIX)) this.pendingProbes.get(message.slice(PROBE_PREFIX.length))?.();
      return;
    }
    this.received += 1;
    const partition = this.partitionOfChannel.get(channel);
    // A message still in flight after an UNSUBSCRIBE: no one here needs it.
    if (partition === undefined || this.watchers[partition] === 0) return;
    const join = this.joins.get(partition);
    if (join) {
      if (join.buffer.length >= RECOVERY_BUFFER_LIMIT) {
        join.overflowed = true;
        join.buffer = [];
      }
      join.buffer.push(message);
      return;
    }
    if (this.recovering) {
      if (this.recoveryBuffer.length >= RECOVERY_BUFFER_LIMIT) {
        this.recoveryBufferOverflowed = true;
        this.recoveryBuffer = [];
      }
      this.recoveryBuffer.push([partition, message]);
      return;
    }
    this.deliverMessage(partition, message);
  }

  private deliverMessage(partition: number, message: string): void {
    if (this.watchers[partition] === 0) return;
    const newline = message.indexOf('\n');
    const position = message.slice(0, newline);
    if (comparePositions(position, this.lastPositions[partition] as Position) <= 0) return;
    this.deliver(this.options.decode(position, message.slice(newline + 1), partition));
  }

  private deliver(update: StoredUpdate): void {
    const last = this.lastPositions[update.partition] as Position;
    if (this.watchers[update.partition] === 0 || comparePositions(update.position, last) <= 0) return;
    this.lastPositions[update.partition] = update.position;
    this.listener?.(update);
  }

  private scheduleProbe(delay: number): void {
    if (this.stopped) return;
    clearTimeout(this.probeTimer);
    this.probeTimer = setTimeout(() => void this.runProbe(), delay);
  }

  /**
   * The node publishes a probe on its own channel and must receive it back: a connected
   * subscriber socket is not proof that messages flow (a failed-over primary may have no
   * subscription for us), so readiness rests on this round trip. On a Cluster one probe per
   * watched partition, on that partition's slot: every shard connection carrying the node's
   * partitions is verified.
   */
  private async runProbe(): Promise<void> {
    if (this.probing || this.stopped) return;
    this.probing = true;
    let ok = false;
    try {
      ok = await this.probe();
      if (ok && this.needsGapFill) {
        await this.fillGap();
        this.needsGapFill = false;
      }
    } catch (error) {
      ok = false;
      // During an outage every probe fails: the outage's own line says it once.
      if (!this.options.outages.down)
        this.options.log('warn', 'pub/sub recovery failed; retrying', { error: loggableError(error) });
    } finally {
      this.probing = false;
    }
    if (!ok) {
      // Messages may have been lost silently: buffer live traffic until the next fill.
      this.recovering = true;
      this.needsGapFill = true;
    }
    this.setVerified(ok);
    const interval = this.options.probeInterval ?? DEFAULT_PROBE_INTERVAL;
    this.scheduleProbe(ok ? interval : Math.min(500, interval));
  }

  private async probe(): Promise<boolean> {
    const { publisher, subscriber, clock, probeChannels } = this.options;
    const timeout = this.options.probeTimeout ?? 2000;
    const probes = this.probedPartitions().map((partition) => {
      const nonce = randomUUID();
      const arrived = new Promise<void>((resolve) => this.pendingProbes.set(nonce, resolve));
      return { channel: probeChannels[partition] as string, nonce, arrived };
    });
    try {
      if (publisher.status !== 'ready' || subscriber.status !== 'ready') return false;
      await clock.measure();
      await Promise.all(
        probes.map(async ({ channel, nonce, arrived }) => {
          await replyWithin(
            publishSharded(publisher, channel, PROBE_PREFIX + nonce),
            timeout,
            'probe publish',
          );
          await replyWithin(arrived, timeout, 'probe delivery');
        }),
      );
      return true;
    } catch {
      return false;
    } finally {
      for (const { nonce } of probes) this.pendingProbes.delete(nonce);
    }
  }

  /**
   * Reads the history of these partitions after the last dispatched positions, merged by time, to
   * its end.
   */
  private async readAndDeliver(partitions: readonly number[]): Promise<void> {
    const { command, histories, decode } = this.options;
    for (;;) {
      const page = await readMerged(command, {
        histories,
        partitions,
        after: this.lastPositions,
        upTo: undefined,
        limit: HISTORY_PAGE,
        decode: ([position, fields]: StreamEntry, partition) =>
          decode(position, fields[fields.indexOf('u') + 1] as string, partition),
      });
      for (const update of page) this.deliver(update);
      if (page.length < HISTORY_PAGE) break;
    }
  }

  /** Reads history after the last dispatched positions, then flushes the live buffer. */
  private async fillGap(): Promise<void> {
    const { command, histories } = this.options;
    if (this.baselineUnknown) {
      // Started while Redis was down: nothing was dispatched yet, so the baseline is the tail now,
      // not the whole history (which would flood early subscribers with old updates).
      this.recoveryBuffer = [];
      for (const partition of this.initiallyWatched) {
        const newest = await readNewestEntry(command, histories[partition] as string);
        const last = this.lastPositions[partition] as Position;
        if (newest && comparePositions(newest[0], last) > 0) this.lastPositions[partition] = newest[0];
      }
      this.baselineUnknown = false;
    }
    for (;;) {
      this.recoveryBuffer = [];
      this.recoveryBufferOverflowed = false;
      await this.readAndDeliver(this.watched());
      if (!this.recoveryBufferOverflowed) break;
    }
    const buffered = this.recoveryBuffer;
    this.recoveryBuffer = [];
    this.recovering = false;
    for (const [partition, message] of buffered) this.deliverMessage(partition, message);
  }

  /** Stops probing and delivering; the transport closes the connections. */
  stop(): void {
    this.stopped = true;
    clearTimeout(this.probeTimer);
    this.listener = undefined;
  }
}

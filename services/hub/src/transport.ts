import type { EventEmitter } from 'node:events';
import type { Cursor, Position, StoredUpdate, Update } from './update.js';

/**
 * Where a publish landed (with several partitions: its copy in the lowest one); `repeat` when its
 * id was already in history (nothing appended; with several partitions: in every one).
 */
export interface Published {
  readonly position: Position;
  readonly repeat: boolean;
}

/**
 * Receives every update, once, in publish order (position order), on every node. With several
 * partitions: each copy from the partitions the node watches, in order within each partition.
 */
export type UpdateListener = (update: StoredUpdate) => void;

/** What a transport reports about its own health; the hub turns these into metrics. */
export interface TransportEvents {
  /** The fan-out subscription came back after a loss (Redis; the gap is filled from history). */
  'fanout-reconnected': [];
  /** The end-to-end pub/sub check passed (true) or failed (false) (Redis). */
  'fanout-verified': [verified: boolean];
}

export type TransportLog = (level: 'info' | 'warn' | 'error', message: string, details?: object) => void;

/** One entry of the active subscriptions registry (hub.md, active subscriptions). */
export interface SubscriptionRecord {
  /** The subscription's topic `/.well-known/mercure/subscriptions/{matchType}/{match}/{subscriber}`. */
  readonly id: string;
  readonly matchType: string;
  readonly match: string;
  readonly subscriber: string;
  readonly payload?: unknown;
}

/**
 * The storage and fan-out backend behind the hub: an in-process implementation
 * (transport-memory.ts) and a Redis one (transport-redis.ts) honour the same contract, and the
 * protocol tests run against both.
 */
export interface Transport {
  readonly kind: 'memory' | 'redis';
  /** Topic partitions (MERCURE_PARTITIONS; the in-process backend has one). */
  readonly partitions: number;
  readonly events: EventEmitter<TransportEvents>;
  /** Starts delivering updates to `listener`. Resolves once the node can serve. */
  start(listener: UpdateListener): Promise<void>;
  /**
   * Appends to history and fans out to every node, atomically; resolves with the position, or
   * rejects with a TransportUnavailableError (errors.ts) when the backend cannot take it. An id
   * whose entry is still in history is not appended again: the call resolves with that entry's
   * position (a resend or a retry; docs/hub.md, resent publishes).
   */
  publish(update: Update): Promise<Published>;
  /**
   * Per partition, the position of the last update handed to the listener. A subscriber registered
   * now receives, live, exactly the updates after it: replay covers the rest (the replay/live race
   * fix).
   */
  readonly lastDispatchedPosition: Cursor;
  /**
   * Fan-out messages this node received from the backend since it started: every update copy of
   * the partitions it listens to, probes not counted (the `mercure_fanout_messages_received_total`
   * counter; in-process: 0, nothing travels).
   */
  readonly fanoutMessagesReceived: number;
  /**
   * Makes the listener receive the copies of these partitions (undefined: all) from now on, until
   * as many `unwatch` calls; synchronous, so a replay snapshot taken next covers the join point.
   * One partition: always watched, a no-op.
   */
  watch(partitions: readonly number[] | undefined): void;
  unwatch(partitions: readonly number[] | undefined): void;
  /**
   * Where a resume after this update id starts, if the id is still in history. Publishing is
   * idempotent per id while its entry is in history, so there is at most one entry (per
   * partition). One partition: its position; several: docs/hub.md, Last-Event-ID across
   * partitions. This read, `readHistory`,
   * `lastEventId`, `historyLength` and `listSubscriptions` serve requests: while the backend cannot
   * serve them (unreachable, no reply in time) they reject with a TransportUnavailableError, which
   * the request answers 503 (retry later).
   */
  findPosition(eventId: string): Promise<Cursor | undefined>;
  /**
   * Entries with `after < position <= upTo` in their partition (after undefined: from the oldest),
   * of `partitions` (undefined: all), at most `limit`, merged by (ms, partition, seq).
   */
  readHistory(
    after: Cursor | undefined,
    upTo: Cursor,
    limit: number,
    partitions?: readonly number[],
  ): Promise<StoredUpdate[]>;
  /** The id of the newest update in history, if any (several partitions: the newest copy by (ms, partition, seq)). */
  lastEventId(): Promise<string | undefined>;
  /** Entries in history, every partition's copies counted (the `mercure_history_length` gauge). */
  historyLength(): Promise<number>;
  /** Undefined when healthy; otherwise why this node must not receive traffic. */
  readiness(): Promise<string | undefined>;

  /** Active subscriptions registry, cluster-wide for Redis. */
  addSubscriptions(records: readonly SubscriptionRecord[]): Promise<void>;
  removeSubscriptions(ids: readonly string[]): Promise<void>;
  /** Every active subscription (a read: see `findPosition`). */
  listSubscriptions(): Promise<SubscriptionRecord[]>;
  /**
   * Entries left behind by a node that died, claimed by this node exactly once (the caller
   * publishes their `active: false` events). Memory: always empty.
   */
  onOrphanedSubscriptions(handler: (records: SubscriptionRecord[]) => void): void;

  stop(): Promise<void>;
}

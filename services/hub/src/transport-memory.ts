import { EventEmitter } from 'node:events';
import type {
  Published,
  SubscriptionRecord,
  Transport,
  TransportEvents,
  UpdateListener,
} from './transport.js';
import {
  type Cursor,
  comparePositions,
  ORIGIN_POSITION,
  type Position,
  type StoredUpdate,
  type Update,
} from './update.js';

export interface MemoryTransportOptions {
  readonly historySize: number;
  /** Milliseconds; 0 disables the age bound. */
  readonly historyTtl: number;
  /** Milliseconds since the epoch; `Date.now` unless a test drives the clock. */
  readonly clock?: () => number;
}

interface Entry {
  readonly update: StoredUpdate;
  readonly storedAt: number;
}

/**
 * The embedded single-node backend: bounded in-memory history and synchronous local fan-out.
 * Never shared between processes, so it must not be used where a cluster was intended (the hub
 * logs which backend it runs on at start).
 */
export class MemoryTransport implements Transport {
  readonly kind = 'memory' as const;
  /** Partitions are a Redis layout: one process has one history and one order (docs/hub.md). */
  readonly partitions = 1;
  /** Never emits: one process has no fan-out path to lose. */
  readonly events = new EventEmitter<TransportEvents>();
  private listener: UpdateListener | undefined;
  private entries: Entry[] = [];
  private head = 0;
  /** Update id -> position of its entry in history (one at most: publishing is idempotent per id). */
  private readonly positionById = new Map<string, Position>();
  private lastMs = 0;
  private sequence = 0;
  private lastPosition: Position = ORIGIN_POSITION;
  private readonly subscriptions = new Map<string, SubscriptionRecord>();

  private readonly now: () => number;

  constructor(private readonly options: MemoryTransportOptions) {
    this.now = options.clock ?? Date.now;
  }

  get lastDispatchedPosition(): Cursor {
    return [this.lastPosition];
  }

  readonly fanoutMessagesReceived = 0;

  watch(): void {}

  unwatch(): void {}

  async start(listener: UpdateListener): Promise<void> {
    this.listener = listener;
  }

  private nextPosition(): Position {
    const now = this.now();
    if (now > this.lastMs) {
      this.lastMs = now;
      this.sequence = 0;
    } else {
      this.sequence += 1;
    }
    return `${this.lastMs}-${this.sequence}`;
  }

  async publish(update: Update): Promise<Published> {
    // Same contract as the Redis backend (publish-4.lua): an id still in history is not appended
    // again, its position is returned (docs/hub.md, resent publishes).
    this.trim(this.now());
    const existing = this.positionById.get(update.id);
    if (existing !== undefined) return { position: existing, repeat: true };
    const position = this.nextPosition();
    const stored: StoredUpdate = { ...update, position, partition: 0 };
    const storedAt = this.now();
    this.entries.push({ update: stored, storedAt });
    this.positionById.set(update.id, position);
    this.trim(storedAt);
    this.lastPosition = position;
    this.listener?.(stored);
    return { position, repeat: false };
  }

  private trim(now: number): void {
    const { historySize, historyTtl } = this.options;
    while (this.entries.length - this.head > 0) {
      const oldest = this.entries[this.head] as Entry;
      const tooMany = this.entries.length - this.head > historySize;
      const tooOld = historyTtl > 0 && now - oldest.storedAt > historyTtl;
      if (!tooMany && !tooOld) break;
      if (this.positionById.get(oldest.update.id) === oldest.update.position) {
        this.positionById.delete(oldest.update.id);
      }
      this.head += 1;
    }
    if (this.head > 1024 && this.head * 2 > this.entries.length) {
      this.entries = this.entries.slice(this.head);
      this.head = 0;
    }
  }

  async findPosition(eventId: string): Promise<Cursor | undefined> {
    this.trim(this.now());
    const position = this.positionById.get(eventId);
    return position === undefined ? undefined : [position];
  }

  /** Index of the first entry whose position is greater than `position`. */
  private indexAfter(position: Position | undefined): number {
    if (position === undefined) return this.head;
    let low = this.head;
    let high = this.entries.length;
    while (low < high) {
      const middle = (low + high) >>> 1;
      if (comparePositions((this.entries[middle] as Entry).update.position, position) <= 0) low = middle + 1;
      else high = middle;
    }
    return low;
  }

  async readHistory(after: Cursor | undefined, upTo: Cursor, limit: number): Promise<StoredUpdate[]> {
    this.trim(this.now());
    const result: StoredUpdate[] = [];
    const bound = upTo[0] ?? ORIGIN_POSITION;
    for (
      let index = this.indexAfter(after?.[0]);
      index < this.entries.length && result.length < limit;
      index++
    ) {
      const { update } = this.entries[index] as Entry;
      if (comparePositions(update.position, bound) > 0) break;
      result.push(update);
    }
    return result;
  }

  async lastEventId(): Promise<string | undefined> {
    // Trimmed first, as every read: an entry past the age bound is no longer in history (as on
    // Redis, whose history keys expire with it).
    this.trim(this.now());
    return this.entries.length > this.head ? this.entries[this.entries.length - 1]?.update.id : undefined;
  }

  async historyLength(): Promise<number> {
    this.trim(this.now());
    return this.entries.length - this.head;
  }

  async readiness(): Promise<string | undefined> {
    return undefined;
  }

  async addSubscriptions(records: readonly SubscriptionRecord[]): Promise<void> {
    for (const record of records) this.subscriptions.set(record.id, record);
  }

  async removeSubscriptions(ids: readonly string[]): Promise<void> {
    for (const id of ids) this.subscriptions.delete(id);
  }

  async listSubscriptions(): Promise<SubscriptionRecord[]> {
    return [...this.subscriptions.values()];
  }

  onOrphanedSubscriptions(): void {
    // A single process has no other node whose entries could be orphaned.
  }

  async stop(): Promise<void> {
    this.listener = undefined;
  }
}

/**
 * A bounded map that forgets its least recently used entries when full. A Map keeps insertion
 * order, so re-inserting on read moves an entry to the young end and the oldest is `keys()`'s
 * first. Used wherever attacker-chosen inputs (tokens, patterns, topics) become cache keys: an
 * unbounded cache there is a memory leak an attacker can drive.
 *
 * Bounded in entries, and optionally in bytes: entries differ in weight by orders of magnitude
 * (a compiled pattern from ~60 KB to ~650 KB), so a count alone does not bound memory.
 */
export interface ByteBudget<K, V> {
  readonly maxBytes: number;
  /** The estimated heap an entry holds, key included. */
  readonly sizeOf: (key: K, value: V) => number;
}

interface Entry<V> {
  readonly value: V;
  readonly bytes: number;
}

export class LruMap<K, V> {
  private readonly entries = new Map<K, Entry<V>>();
  private totalBytes = 0;

  constructor(
    readonly maxEntries: number,
    private readonly byteBudget?: ByteBudget<K, V>,
  ) {
    if (!Number.isInteger(maxEntries) || maxEntries < 1) {
      throw new RangeError('maxEntries must be a positive integer');
    }
    if (byteBudget && !(byteBudget.maxBytes > 0)) throw new RangeError('maxBytes must be positive');
  }

  get size(): number {
    return this.entries.size;
  }

  /** Sum of the entries' estimated sizes (0 without a byte budget). */
  get bytes(): number {
    return this.totalBytes;
  }

  get(key: K): V | undefined {
    const entry = this.entries.get(key);
    if (entry === undefined) return undefined;
    this.entries.delete(key);
    this.entries.set(key, entry);
    return entry.value;
  }

  /** Stores an entry, evicting the oldest until both bounds hold; one heavier than the whole budget is not kept. */
  set(key: K, value: V): void {
    this.delete(key);
    const bytes = this.byteBudget ? this.byteBudget.sizeOf(key, value) : 0;
    if (this.byteBudget && bytes > this.byteBudget.maxBytes) return;
    this.entries.set(key, { value, bytes });
    this.totalBytes += bytes;
    const maxBytes = this.byteBudget?.maxBytes ?? Number.POSITIVE_INFINITY;
    while (this.entries.size > this.maxEntries || this.totalBytes > maxBytes) {
      const oldest = this.entries.keys().next();
      if (oldest.done) break;
      this.delete(oldest.value);
    }
  }

  delete(key: K): void {
    const entry = this.entries.get(key);
    if (entry === undefined) return;
    this.entries.delete(key);
    this.totalBytes -= entry.bytes;
  }

  clear(): void {
    this.entries.clear();
    this.totalBytes = 0;
  }
}

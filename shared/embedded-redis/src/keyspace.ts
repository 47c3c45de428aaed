/**
 * The keys and their values, with expiry on one clock. Values are the Redis types Herald's
 * scripts use; a key of another type than a command expects answers WRONGTYPE, an emptied
 * collection disappears, and an expired key is gone whenever it is next looked at (and swept
 * by `expireDue`), as in Redis.
 */
import { errors, fail } from './reply.js';

/** Milliseconds since the epoch; the engine's only time source (TIME, expiry, XADD '*'). */
export interface Clock {
  now(): number;
}

export const systemClock: Clock = { now: () => Date.now() };

export interface StreamEntry {
  readonly ms: number;
  readonly seq: number;
  readonly fields: readonly string[];
}

export interface StreamValue {
  entries: StreamEntry[];
  lastMs: number;
  lastSeq: number;
}

export interface SortedSetValue {
  readonly scores: Map<string, number>;
  /** By score, then member (byte order, as Redis compares members of equal score). */
  readonly order: { score: number; member: string }[];
}

interface ValueTypes {
  string: string;
  hash: Map<string, string>;
  set: Set<string>;
  zset: SortedSetValue;
  list: string[];
  stream: StreamValue;
}

export type ValueType = keyof ValueTypes;
export type Value = { [T in ValueType]: { type: T; value: ValueTypes[T] } }[ValueType];
type ValueOf<T extends ValueType> = ValueTypes[T];

export class Keyspace {
  private readonly values = new Map<string, Value>();
  private readonly expiries = new Map<string, number>();

  constructor(readonly clock: Clock) {}

  /** The key's value if it exists and has not expired. */
  lookup(key: string): Value | undefined {
    const at = this.expiries.get(key);
    if (at !== undefined && at <= this.clock.now()) this.delete(key);
    return this.values.get(key);
  }

  exists(key: string): boolean {
    return this.lookup(key) !== undefined;
  }

  /** The value of a key of `type`, undefined when missing; WRONGTYPE when of another type. */
  read<T extends ValueType>(key: string, type: T): ValueOf<T> | undefined {
    const found = this.lookup(key);
    if (!found) return undefined;
    if (found.type !== type) fail(errors.wrongType());
    return found.value as ValueOf<T>;
  }

  /** The value of a key of `type`, created empty by `create` when missing. */
  write<T extends ValueType>(key: string, type: T, create: () => ValueOf<T>): ValueOf<T> {
    const found: ValueOf<T> | undefined = this.read(key, type);
    if (found !== undefined) return found as ValueOf<T>;
    const value = create();
    this.values.set(key, { type, value } as Value);
    return value;
  }

  /** Sets a string, dropping any expiry (SET without KEEPTTL). */
  setString(key: string, value: string): void {
    this.values.set(key, { type: 'string', value });
    this.expiries.delete(key);
  }

  delete(key: string): boolean {
    this.expiries.delete(key);
    return this.values.delete(key);
  }

  /** Removes a collection left empty by a command (Redis never keeps an empty hash, set, zset or list). */
  dropIfEmpty(key: string, size: number): void {
    if (size === 0) this.delete(key);
  }

  /** Sets the key's expiry (ms since the epoch); one in the past deletes it. False if no key. */
  expireAt(key: string, at: number): boolean {
    if (!this.exists(key)) return false;
    if (at <= this.clock.now()) this.delete(key);
    else this.expiries.set(key, at);
    return true;
  }

  /** ms left to live: -2 no key, -1 no expiry. */
  timeToLive(key: string): number {
    if (!this.exists(key)) return -2;
    const at = this.expiries.get(key);
    return at === undefined ? -1 : Math.max(0, at - this.clock.now());
  }

  /** Deletes every key whose time has come (Redis's active expiry; lookups expire lazily too). */
  expireDue(): number {
    const now = this.clock.now();
    let removed = 0;
    for (const [key, at] of this.expiries) {
      if (at <= now) {
        this.delete(key);
        removed++;
      }
    }
    return removed;
  }

  get size(): number {
    return this.values.size;
  }

  /** Every live key (KEYS, SCAN and FLUSHALL's reach). */
  *keys(): Iterable<string> {
    for (const key of [...this.values.keys()]) if (this.exists(key)) yield key;
  }

  flush(): void {
    this.values.clear();
    this.expiries.clear();
  }
}

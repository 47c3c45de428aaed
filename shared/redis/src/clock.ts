import type { RedisClient } from './client.js';
import { CLOCK_KEY_SUFFIX } from './scripts.js';

/**
 * The time storage code reads (milliseconds since the epoch), given to it rather than read from
 * `Date.now()`, so a test can move it. Scripts get the matching clock when they are loaded
 * (`loadScripts(directory, { clock })`): Redis TIME with the system clock, a key a test writes
 * with a test clock.
 */
export interface Clock {
  now(): number;
  /**
   * Runs `callback` once, when this clock reaches `at` (ms since the epoch; at once, on a later
   * turn, when it already has). Returns what cancels it. Node code waits on its clock this way,
   * never with `setTimeout`, so a test clock decides when a timer fires.
   */
  timer(at: number, callback: () => void): () => void;
}

/** The machine's clock: what every node runs on outside tests. */
export const systemClock: Clock = {
  now: () => Date.now(),
  // Unref'd: a node's timers (heartbeats, long-poll deadlines) never keep a process alive on
  // their own; the server they serve does.
  timer(at, callback) {
    const timeout = setTimeout(callback, Math.max(0, at - Date.now())).unref();
    return () => clearTimeout(timeout);
  },
};

/**
 * A clock a test moves (`set`, `advance`), for node code and for scripts loaded with
 * `{ clock: 'key' }`: it writes its time to `<base>~test-clock` (CLOCK_KEY_SUFFIX) for every
 * base it tracks, the first key of the scripts called on that base. Without a connection it
 * is only a node-side clock (an in-process backend).
 */
export class KeyClock implements Clock {
  private current: number;
  private readonly keys = new Set<string>();
  /** Timers not fired yet, in the order they were set. */
  private readonly timers = new Set<{ at: number; callback: () => void }>();

  constructor(
    start: number,
    private readonly redis?: RedisClient,
  ) {
    this.current = start;
  }

  now(): number {
    return this.current;
  }

  /** Fires when `set` or `advance` reaches `at`; one already due fires on the next turn. */
  timer(at: number, callback: () => void): () => void {
    const entry = { at, callback };
    this.timers.add(entry);
    if (at <= this.current) setImmediate(() => this.fireDue());
    return () => this.timers.delete(entry);
  }

  /** Adds bases (the scripts' KEYS[1]) whose clock key `set` writes, and writes it now. */
  async track(bases: readonly string[]): Promise<void> {
    if (!this.redis) return;
    const added = bases.map((base) => `${base}${CLOCK_KEY_SUFFIX}`);
    for (const key of added) this.keys.add(key);
    // One command per key: on Cluster the keys live in different slots.
    await Promise.all(added.map((key) => this.redis?.set(key, String(this.current))));
  }

  /** Forgets every tracked base (the keys stay: they belong to the test's prefix). */
  untrackAll(): void {
    this.keys.clear();
  }

  /** Moves the time; a script must never see it go back (XADD `<ms>-*` below a stream's last id fails). */
  async set(ms: number): Promise<void> {
    this.current = ms;
    const redis = this.redis;
    if (redis) await Promise.all([...this.keys].map((key) => redis.set(key, String(ms))));
    // After the scripts' keys: what a timer starts reads the new time on both sides.
    this.fireDue();
  }

  /** Timers due now, earliest first (ties in the order they were set). */
  private fireDue(): void {
    const due = [...this.timers].filter((entry) => entry.at <= this.current).sort((a, b) => a.at - b.at);
    for (const entry of due) {
      if (!this.timers.delete(entry)) continue;
      entry.callback();
    }
  }

  advance(ms: number): Promise<void> {
    return this.set(this.current + ms);
  }
}

/*
 * One clock for both backends of the differential test, moved by the test only.
 *
 * The in-process storage and the Redis storage's node-side code read it as their `Clock`
 * (MemoryStorageOptions.clock, RedisStorageOptions.clock). The Redis storage's scripts read
 * the same time through `--@include clock`, loaded on the `key` script clock (shared/redis
 * README.md): their time is the milliseconds stored at the script's KEYS[1] + CLOCK_KEY_SUFFIX,
 * and XADD stamps `<ms>-*`. The key is in the script's slot, so on Redis Cluster the clock
 * writes one per queue base (TestClock.track). Nothing else differs from production: the
 * script text is the broker's, the clock include aside.
 */
import { loadBrokerScripts } from '@herald/broker';
import { CLOCK_KEY_SUFFIX, type Clock, type RedisClient, type ScriptSet } from '@herald/redis';

/** The broker's scripts reading the time a TestClock writes. */
export function scriptsWithClock(): ScriptSet {
  return loadBrokerScripts({ clock: 'key' });
}

/** The fake clock: what both storages read, and a key per queue base for the scripts. */
export class TestClock implements Clock {
  private current: number;
  private keys: string[] = [];
  constructor(
    private readonly redis: RedisClient,
    readonly start: number,
  ) {
    this.current = start;
  }

  /** The queue bases (the scripts' KEYS[1]) whose clock keys `set` writes from now on. */
  track(bases: readonly string[]): Promise<void> {
    this.keys = bases.map((base) => `${base}${CLOCK_KEY_SUFFIX}`);
    return this.set(this.current);
  }

  now(): number {
    return this.current;
  }

  async set(ms: number): Promise<void> {
    this.current = ms;
    // One command per key: on Cluster the keys live in different slots.
    await Promise.all(this.keys.map((key) => this.redis.set(key, String(ms))));
  }

  advance(ms: number): Promise<void> {
    return this.set(this.current + ms);
  }
}

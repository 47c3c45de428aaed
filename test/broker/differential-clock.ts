/*
 * One clock for both backends of the differential test, moved by the test only.
 *
 * The in-process storage reads `Date.now()`: the test mocks Date (node:test's mock timers).
 * The Redis storage reads Redis TIME in its scripts and stamps stream entries with Redis's own
 * clock (XADD *); its node-side code reads `Date.now()` too. Redis has no clock a test can set,
 * so the scripts given to that storage (RedisStorageOptions.scripts) are the broker's scripts
 * with those two reads pointed at a key the test writes: TIME answers the key's milliseconds
 * and XADD stamps `<ms>-*`. Everything else in the scripts is the production text. The key is
 * the script's first key with CLOCK_SUFFIX, so on Redis Cluster it is in the script's slot: the
 * test writes one per queue base (TestClock.track).
 */
import { createHash } from 'node:crypto';
import { fileURLToPath } from 'node:url';
import { loadScripts, type RedisClient, type ScriptSet } from '@herald/redis';

/** The broker's Lua directory (services/broker/lua), read as production reads it. */
const LUA_DIRECTORY = fileURLToPath(new URL('../../services/broker/lua/', import.meta.url));

const TIME_CALL = "redis.call('TIME')";
const XADD_NOW = /'XADD', ([^,]+?), '\*'/g;

/** Appended to a script's KEYS[1]: the key its clock reads. */
export const CLOCK_SUFFIX = '~test-clock';

/**
 * The broker's scripts with Redis TIME and XADD's clock replaced by the value of KEYS[1] ..
 * CLOCK_SUFFIX (a script whose key has no clock fails: it cannot run on Redis's clock unseen).
 */
export function scriptsWithClock(): ScriptSet {
  const clockMs = `tonumber(redis.call('GET', KEYS[1] .. '${CLOCK_SUFFIX}'))`;
  const time = `(function() local ms = ${clockMs} return { string.format('%.0f', math.floor(ms / 1000)), string.format('%.0f', (ms % 1000) * 1000) } end)()`;
  let timeReads = 0;
  let streamWrites = 0;
  const scripts = new Map(
    [...loadScripts(LUA_DIRECTORY)].map(([name, script]) => {
      const source = script.source
        .replaceAll(TIME_CALL, () => {
          timeReads++;
          return time;
        })
        .replace(XADD_NOW, (_, stream: string) => {
          streamWrites++;
          return `'XADD', ${stream}, string.format('%.0f', ${clockMs}) .. '-*'`;
        });
      return [name, { ...script, source, sha: createHash('sha1').update(source).digest('hex') }];
    }),
  );
  // A script that reads the clock another way would run on Redis's clock: refuse to start.
  if (timeReads === 0 || streamWrites === 0 || scripts.size === 0) {
    throw new Error(`clock not found in the broker scripts (${timeReads} TIME, ${streamWrites} XADD)`);
  }
  for (const [name, script] of scripts) {
    if (/redis\.call\('TIME'\)|'XADD', [^,]+, '\*'/.test(script.source)) {
      throw new Error(`${name}: a clock read was left in place`);
    }
  }
  return scripts;
}

/** The fake clock: Date for the node side (mocked by the caller), a key per queue base for the scripts. */
export class TestClock {
  private current: number;
  private keys: string[] = [];
  constructor(
    private readonly redis: RedisClient,
    private readonly setDate: (ms: number) => void,
    readonly start: number,
  ) {
    this.current = start;
  }

  /** The queue bases (the scripts' KEYS[1]) whose clock keys `set` writes from now on. */
  track(bases: readonly string[]): Promise<void> {
    this.keys = bases.map((base) => `${base}${CLOCK_SUFFIX}`);
    return this.set(this.current);
  }

  now(): number {
    return this.current;
  }

  async set(ms: number): Promise<void> {
    this.current = ms;
    this.setDate(ms);
    // One command per key: on Cluster the keys live in different slots.
    await Promise.all(this.keys.map((key) => this.redis.set(key, String(ms))));
  }

  advance(ms: number): Promise<void> {
    return this.set(this.current + ms);
  }
}

/*
 * One clock for both backends of the differential test, moved by the test only.
 *
 * The in-process storage reads `Date.now()`: the test mocks Date (node:test's mock timers).
 * The Redis storage reads Redis TIME in its scripts and stamps stream entries with Redis's own
 * clock (XADD *); its node-side code reads `Date.now()` too. Redis has no clock a test can set,
 * so the scripts given to that storage (RedisStorageOptions.scripts) are the broker's scripts
 * with those two reads pointed at a key the test writes: TIME answers the key's milliseconds
 * and XADD stamps `<ms>-*`. Everything else in the scripts is the production text.
 */
import { createHash } from 'node:crypto';
import { fileURLToPath } from 'node:url';
import { loadScripts, type Redis, type ScriptSet } from '@herald/redis';

/** The broker's Lua directory (services/broker/lua), read as production reads it. */
const LUA_DIRECTORY = fileURLToPath(new URL('../../services/broker/lua/', import.meta.url));

const TIME_CALL = "redis.call('TIME')";
const XADD_NOW = /'XADD', ([^,]+?), '\*'/g;

/** The broker's scripts with Redis TIME and XADD's clock replaced by the value of `clockKey`. */
export function scriptsWithClock(clockKey: string): ScriptSet {
  const key = JSON.stringify(clockKey);
  const clockMs = `tonumber(redis.call('GET', ${key}))`;
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

/** The fake clock: Date for the node side (mocked by the caller), `clockKey` for the scripts. */
export class TestClock {
  private current: number;
  constructor(
    private readonly redis: Redis,
    private readonly clockKey: string,
    private readonly setDate: (ms: number) => void,
    readonly start: number,
  ) {
    this.current = start;
  }

  now(): number {
    return this.current;
  }

  async set(ms: number): Promise<void> {
    this.current = ms;
    this.setDate(ms);
    await this.redis.set(this.clockKey, String(ms));
  }

  advance(ms: number): Promise<void> {
    return this.set(this.current + ms);
  }
}

/*
 * What the benches that compare the broker's Lua scripts with a git revision of them share
 * (broker-lua.bench.ts, broker-large.bench.ts): a private Redis, the scripts at the revision
 * (git archive of services/broker/lua), storages loading either set, and the time Redis spent in
 * scripts during a call (INFO commandstats, reset before it).
 */
import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { type BrokerStorage, RedisStorage } from '@herald/broker';
import { loadScripts } from '@herald/redis';
import { RedisServer, uniquePrefix } from '@herald/testkit';
import { Redis } from 'ioredis';

export interface LuaRevisionBench {
  /** A storage on the private Redis: the scripts at the revision, or as checked out. */
  storage(of: 'revision' | 'current'): BrokerStorage;
  /** Runs `call`; returns its result, its time (ms) and the time Redis spent in scripts (ms). */
  timed<T>(call: () => Promise<T>): Promise<{ result: T; callMs: number; scriptMs: number }>;
  /** Closes the storages made, the Redis and the revision's copy. */
  close(): Promise<void>;
}

export async function luaRevisionBench(
  revision: string,
  options: { commandTimeoutMs?: number } = {},
): Promise<LuaRevisionBench> {
  const root = fileURLToPath(new URL('../..', import.meta.url));
  const baselineDirectory = mkdtempSync(join(tmpdir(), 'broker-lua-'));
  const archive = execFileSync('git', ['-C', root, 'archive', revision, 'services/broker/lua']);
  execFileSync('tar', ['-x', '-C', baselineDirectory], { input: archive });
  const redisServer = await RedisServer.start();
  const admin = new Redis(redisServer.url);
  const log = { warn: () => undefined, info: () => undefined };
  const made: BrokerStorage[] = [];
  return {
    storage(of) {
      const storage = new RedisStorage({
        topology: { kind: 'standalone', url: redisServer.url },
        prefix: uniquePrefix('lua-bench'),
        log,
        ...(options.commandTimeoutMs ? { commandTimeoutMs: options.commandTimeoutMs } : {}),
        ...(of === 'revision'
          ? { scripts: loadScripts(join(baselineDirectory, 'services/broker/lua')) }
          : {}),
      });
      made.push(storage);
      return storage;
    },
    async timed(call) {
      await admin.config('RESETSTAT');
      const started = performance.now();
      const result = await call();
      const callMs = performance.now() - started;
      const usec = /cmdstat_evalsha:calls=\d+,usec=(\d+)/.exec(await admin.info('commandstats'))?.[1];
      if (usec === undefined) throw new Error('no EVALSHA in INFO commandstats');
      return { result, callMs, scriptMs: Number(usec) / 1000 };
    },
    async close() {
      await Promise.all(made.map((storage) => storage.close()));
      admin.disconnect();
      await redisServer.destroy();
      rmSync(baselineDirectory, { recursive: true, force: true });
    },
  };
}

/** One side of a step-by-step comparison: a storage and each step's times (ms), round by round. */
export interface RevisionVariant<Step extends string> {
  label: string;
  storage: BrokerStorage;
  times: Record<Step, number[]>;
}

/**
 * Runs `round` `rounds` times on the revision's storage and the current one, alternating which
 * goes first, then prints the load average at the start and each step's median on each side
 * with their ratio. `about` describes the run in the table's heading line.
 */
export async function compareSteps<Step extends string>(
  bench: LuaRevisionBench,
  revision: string,
  steps: readonly Step[],
  options: { rounds: number; about: string; column: string },
  round: (variant: RevisionVariant<Step>, index: number) => Promise<void>,
): Promise<void> {
  const variants = (['revision', 'current'] as const).map((of) => ({
    label: of === 'current' ? 'current' : revision,
    storage: bench.storage(of),
    times: Object.fromEntries(steps.map((step) => [step, [] as number[]])) as Record<Step, number[]>,
  }));
  const load = loadavg()
    .map((value) => value.toFixed(2))
    .join(' ');
  for (let index = 0; index < options.rounds; index++) {
    for (const variant of index % 2 === 0 ? variants : [...variants].reverse()) await round(variant, index);
  }
  const median = (values: number[]) =>
    [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)] as number;
  const [baseline, current] = variants as [RevisionVariant<Step>, RevisionVariant<Step>];
  console.log(`load average at the start: ${load}; ${options.about}, median of ${options.rounds} rounds`);
  console.log(`| ${options.column} | in Redis, ${revision} ms | current ms | current/${revision} |`);
  console.log('|---|---|---|---|');
  for (const step of steps) {
    const before = median(baseline.times[step]);
    const after = median(current.times[step]);
    console.log(
      `| ${step} | ${before.toFixed(1)} | ${after.toFixed(1)} | ${(after / before).toPrecision(2)}x |`,
    );
  }
}

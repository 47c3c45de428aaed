/*
 * Broker memory under a push load, per set of Node flags (issue #26): for each set, a fresh broker
 * child on a fresh private redis-server takes 16 concurrent pushes of 500 messages (the load that
 * fills peer.bench.ts's pop queue, where the broker's peak was reached) and the benchmark prints
 * its RSS once ready, its peak RSS (VmHWM) and the push rate, with ratios against the first set
 * (by default, no flags) measured in the same run. Two runs, each in a new order; build the
 * broker first.
 *
 *   node --import tsx test/bench/broker-memory.bench.ts
 *
 * Environment:
 * - BENCH_FLAG_SETS: flag sets separated by `|` (default: none | the chart's NODE_OPTIONS | the
 *   chart's NODE_OPTIONS and command flag); a `NAME=value` word in a set is an environment
 *   variable of the broker (e.g. `MALLOC_ARENA_MAX=2`), not a flag;
 * - BENCH_FILL: messages pushed per run (default 400,000, as peer.bench.ts).
 * Run only on a quiet machine (no test suite, no helper): the load average is printed.
 */
import { readFileSync } from 'node:fs';
import { loadavg } from 'node:os';
import { RedisServer } from '@herald/testkit';
import { Pool } from 'undici';
import { environmentFromWords, startBrokerChild } from './broker-child.js';

const FLAG_SETS = (
  process.env.BENCH_FLAG_SETS ?? '|--max-semi-space-size=8|--max-semi-space-size=8 --heap-growing-percent=50'
)
  .split('|')
  .map((set) => set.split(' ').filter((flag) => flag !== ''));
const FILL = Number(process.env.BENCH_FILL ?? 400_000);
const PRODUCERS = 16;
const BATCH = 500;
const PARTITIONS = 10;
const PAYLOAD = { orderId: 12345, customer: 'c-42', amount: 99.5, items: ['a', 'b', 'c'] };

interface Result {
  readyMb: number;
  peakMb: number;
  rate: number;
}

function statusMb(pid: number, field: string): number {
  const status = readFileSync(`/proc/${pid}/status`, 'utf8');
  return Number(new RegExp(`${field}:\\s+(\\d+)`).exec(status)?.[1] ?? Number.NaN) / 1024;
}

async function run(flags: string[]): Promise<Result> {
  const redis = await RedisServer.start();
  const { child, url } = await startBrokerChild({
    redisUrl: redis.url,
    nodeArguments: flags.filter((word) => word.startsWith('-')),
    environment: environmentFromWords(flags),
  });
  const pool = new Pool(url, { connections: PRODUCERS });
  try {
    const pid = child.pid as number;
    await new Promise((resolve) => setTimeout(resolve, 2000));
    const readyMb = statusMb(pid, 'VmRSS');
    let sent = 0;
    const started = performance.now();
    await Promise.all(
      Array.from({ length: PRODUCERS }, async () => {
        while (sent < FILL) {
          const start = sent;
          sent += BATCH;
          const items = Array.from({ length: BATCH }, (_, index) => ({
            queue: 'memory',
            partition: `p${(start + index) % PARTITIONS}`,
            payload: PAYLOAD,
          }));
          const response = await pool.request({
            method: 'POST',
            path: '/api/v1/push',
            body: JSON.stringify({ items }),
            headers: { 'content-type': 'application/json' },
          });
          const text = await response.body.text();
          if (response.statusCode !== 200 && response.statusCode !== 201)
            throw new Error(`push: ${response.statusCode} ${text}`);
        }
      }),
    );
    const rate = sent / ((performance.now() - started) / 1000);
    return { readyMb, peakMb: statusMb(pid, 'VmHWM'), rate };
  } finally {
    await pool.close();
    child.kill('SIGTERM');
    await new Promise((resolve) => child.once('exit', resolve));
    await redis.stop();
  }
}

console.log(
  `broker-memory.bench: Node ${process.version}, ${FILL.toLocaleString('en')} messages per run, ` +
    `load average ${loadavg()[0]?.toFixed(2)} at the start`,
);
const results: Result[][] = FLAG_SETS.map(() => []);
for (const runIndex of [0, 1]) {
  const order = FLAG_SETS.map((_, index) => index);
  if (runIndex === 1) order.reverse();
  for (const index of order) results[index]?.push(await run(FLAG_SETS[index] ?? []));
}

const baseline = results[0] ?? [];
const setName = (flags: string[]) => (flags.length > 0 ? `\`${flags.join(' ')}\`` : 'none');
const mb = (value: number) => value.toFixed(1);
const ratio = (value: number, base: number | undefined) => (base ? `${(value / base).toFixed(2)}x` : '');
console.log(`(load average ${loadavg()[0]?.toFixed(2)} at the end)`);
console.log(
  `| broker flags | run | RSS ready, MB | peak RSS (VmHWM), MB | peak vs ${setName(FLAG_SETS[0] ?? [])} | push msg/s | vs ${setName(FLAG_SETS[0] ?? [])} |`,
);
console.log('|---|---|---|---|---|---|---|');
FLAG_SETS.forEach((flags, index) => {
  (results[index] ?? []).forEach((result, runIndex) => {
    const base = baseline[runIndex];
    console.log(
      `| ${setName(flags)} | ${runIndex + 1} | ${mb(result.readyMb)} | ` +
        `${mb(result.peakMb)} | ${ratio(result.peakMb, base?.peakMb)} | ` +
        `${Math.round(result.rate).toLocaleString('en')} | ${ratio(result.rate, base?.rate)} |`,
    );
  });
});

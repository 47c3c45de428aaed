/*
 * What Redis command latency looks like when Redis is busy with its own work, to choose the
 * default command deadline (REDIS_COMMAND_TIMEOUT, docs/contracts.md "Redis command deadline"):
 * past the deadline a node refuses the request with 503 instead of waiting; below the spikes
 * Redis makes in normal operation, it would refuse requests that would have succeeded.
 *
 * One private redis-server with `appendonly yes`, `appendfsync everysec` (Redis's default AOF
 * policy), a dataset of BENCH_DATA_MB (default 1024) MB; one client sends the broker's kind of
 * command one at a time (an XADD and an HGET, like a push's script does, awaited), and the
 * latency of each is recorded in four phases: idle, during BGSAVE (fork + RDB write), during
 * BGREWRITEAOF (fork + AOF rewrite: the fsync of everysec can stall writes), and during a
 * FLUSHALL ASYNC of a copy (lazy freeing). Prints p50/p99/p99.9/max per phase and each phase's
 * max against the idle phase's, with the load average.
 * Run: node --import tsx test/bench/redis-deadline.bench.ts
 */
import { loadavg } from 'node:os';
import { RedisServer } from '@herald/testkit';
import { Redis } from 'ioredis';

const DATA_MB = Number(process.env.BENCH_DATA_MB ?? 1024);
const VALUE = 'v'.repeat(10_000);

function percentile(sorted: readonly number[], p: number): number {
  return sorted[Math.min(sorted.length - 1, Math.floor((sorted.length * p) / 100))] ?? 0;
}

async function fill(redis: Redis): Promise<void> {
  const keys = Math.ceil((DATA_MB * 1024 * 1024) / VALUE.length);
  for (let start = 0; start < keys; start += 1000) {
    const pipeline = redis.pipeline();
    for (let key = start; key < Math.min(keys, start + 1000); key++) pipeline.set(`data:${key}`, VALUE);
    await pipeline.exec();
  }
}

/** Commands one at a time until `done()` (checked between commands), their latencies in ms. */
async function sample(
  redis: Redis,
  done: () => Promise<boolean> | boolean,
  minMs: number,
): Promise<number[]> {
  const latencies: number[] = [];
  const started = performance.now();
  let n = 0;
  while (performance.now() - started < minMs || !(await done())) {
    const at = performance.now();
    await redis.xadd('probe:stream', 'MAXLEN', '~', '1000', '*', 'n', String(n++));
    await redis.hget('probe:hash', 'field');
    latencies.push(performance.now() - at);
  }
  return latencies.sort((a, b) => a - b);
}

async function persistenceIdle(admin: Redis): Promise<boolean> {
  const info = await admin.info('persistence');
  return /rdb_bgsave_in_progress:0/.test(info) && /aof_rewrite_in_progress:0/.test(info);
}

const server = await RedisServer.start({
  extraArguments: ['--appendonly', 'yes', '--appendfsync', 'everysec', '--aof-use-rdb-preamble', 'no'],
});
const redis = new Redis(server.url, { maxRetriesPerRequest: null });
const admin = new Redis(server.url);
try {
  const filling = performance.now();
  await fill(redis);
  const filled = ((performance.now() - filling) / 1000).toFixed(1);
  // The initial AOF must be settled before measuring.
  while (!(await persistenceIdle(admin))) await new Promise((resolve) => setTimeout(resolve, 200));
  const phases: [string, number[]][] = [];
  phases.push(['idle (5 s)', await sample(redis, () => true, 5000)]);
  await admin.bgsave();
  phases.push(['BGSAVE', await sample(redis, () => persistenceIdle(admin), 500)]);
  await admin.bgrewriteaof();
  phases.push(['BGREWRITEAOF', await sample(redis, () => persistenceIdle(admin), 500)]);
  let flushed = false;
  void admin.flushall('ASYNC').then(() => {
    flushed = true;
  });
  phases.push(['FLUSHALL ASYNC', await sample(redis, () => flushed, 2000)]);

  const [one, five] = loadavg();
  console.log(
    `\nRedis command latency while Redis works (${DATA_MB} MB, filled in ${filled} s; load average ${one?.toFixed(2)}, ${five?.toFixed(2)})\n`,
  );
  console.log('| phase | commands | p50 ms | p99 ms | p99.9 ms | max ms | max vs idle max |');
  console.log('|---|---:|---:|---:|---:|---:|---:|');
  const idleMax = phases[0]?.[1].at(-1) ?? 1;
  for (const [name, latencies] of phases) {
    const max = latencies.at(-1) ?? 0;
    console.log(
      `| ${name} | ${latencies.length} | ${percentile(latencies, 50).toFixed(2)} | ${percentile(latencies, 99).toFixed(2)} | ${percentile(latencies, 99.9).toFixed(2)} | ${max.toFixed(1)} | ${(max / idleMax).toFixed(1)}× |`,
    );
  }
} finally {
  redis.disconnect();
  admin.disconnect();
  await server.stop();
}

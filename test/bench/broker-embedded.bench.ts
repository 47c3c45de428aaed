/*
 * What the embedded default costs: the broker's storage (no HTTP) pushing and popping+acking
 * the same fixed workload on each backend in one run, with ratios against the Redis backend
 * on a private redis-server (the baseline: the same code and scripts, on real Redis).
 * Rows: `redis` (RedisStorage on redis-server), `embedded` (the same RedisStorage on the
 * in-process engine, @herald/embedded-redis: the default without REDIS_URL), and, while it
 * exists, `memory (TS rules)`: the former in-process backend with the rules in TypeScript.
 * Run: node --import tsx test/bench/broker-embedded.bench.ts   (build first; a quiet machine)
 *   BENCH_MESSAGES=20000   messages per row (default below)
 */
import { randomUUID } from 'node:crypto';
import { loadavg } from 'node:os';
import type { BrokerStorage } from '@herald/broker';

type PushItem = Parameters<BrokerStorage['queues']['push']>[0][number];

import * as broker from '@herald/broker';
import { RedisServer, uniquePrefix } from '@herald/testkit';

const MESSAGES = Number(process.env.BENCH_MESSAGES ?? 20_000);
const BATCH = 100;
const log = { warn: () => undefined, info: () => undefined, error: () => undefined };

interface Row {
  name: string;
  pushPerSecond: number;
  popAckPerSecond: number;
  pushOnePerSecond: number;
}

function items(queue: string, count: number): PushItem[] {
  return Array.from({ length: count }, () => ({
    queue,
    partition: 'Default',
    transactionId: randomUUID(),
    messageId: randomUUID(),
    traceId: null,
    data: '{"orderId":12345,"customer":"c-42","amount":99.5,"items":["a","b","c"]}',
    producerSub: null,
  }));
}

async function measure(name: string, storage: BrokerStorage): Promise<Row> {
  const queue = `bench-${randomUUID().slice(0, 8)}`;
  // Warm-up: scripts loaded, JIT warm.
  await storage.queues.push(items(`${queue}-warm`, BATCH));
  let started = performance.now();
  for (let pushed = 0; pushed < MESSAGES; pushed += BATCH) await storage.queues.push(items(queue, BATCH));
  const pushPerSecond = MESSAGES / ((performance.now() - started) / 1000);
  started = performance.now();
  let consumed = 0;
  while (consumed < MESSAGES) {
    const popped = await storage.queues.pop({
      queue,
      partition: undefined,
      group: '__QUEUE_MODE__',
      batch: BATCH,
      maxPartitions: 1,
      leaseId: randomUUID(),
      subscription: { mode: 'all' },
    });
    const partition = popped.partitions[0];
    if (!partition) throw new Error(`${name}: pop answered nothing after ${consumed}`);
    await storage.queues.ack(
      partition.messages.map((message) => ({
        transactionId: message.transactionId,
        partitionId: partition.partitionId,
        status: 'completed' as const,
        group: '__QUEUE_MODE__',
        leaseId: partition.leaseId,
        error: null,
      })),
    );
    consumed += partition.messages.length;
  }
  const popAckPerSecond = MESSAGES / ((performance.now() - started) / 1000);
  const singles = Math.min(MESSAGES, 5_000);
  started = performance.now();
  for (let pushed = 0; pushed < singles; pushed++) await storage.queues.push(items(`${queue}-one`, 1));
  const pushOnePerSecond = singles / ((performance.now() - started) / 1000);
  return { name, pushPerSecond, popAckPerSecond, pushOnePerSecond };
}

const redisServer = await RedisServer.start();
const rows: Row[] = [];
try {
  const onRedis = new broker.RedisStorage({
    topology: { kind: 'standalone', url: redisServer.url },
    prefix: uniquePrefix('bench-embedded'),
    log,
  });
  rows.push(await measure('redis (redis-server)', onRedis));
  await onRedis.close();
  const embedded = await broker.startEmbeddedStorage({ prefix: 'herald:broker:', log });
  rows.push(await measure('embedded (in-process engine)', embedded));
  await embedded.close();
  // The former in-process backend, while its TypeScript copy of the rules still exists.
  const Former = (broker as Record<string, unknown>).MemoryStorage as (new () => BrokerStorage) | undefined;
  if (Former) {
    const memory = new Former();
    rows.push(await measure('memory (TS rules, former)', memory));
    await memory.close();
  }
} finally {
  await redisServer.destroy();
}

const [baseline] = rows;
const format = (value: number) => Math.round(value).toLocaleString('en-US');
const ratio = (value: number, base: number) => `${(value / base).toFixed(2)}x`;
console.log(
  `load average ${loadavg()
    .map((value) => value.toFixed(2))
    .join(' ')}; ${MESSAGES} messages a row, batches of ${BATCH}`,
);
console.log(
  '| storage | push b100 msg/s | pop+ack b100 msg/s | push b1 msg/s | ratios to redis (push, pop+ack, push b1) |',
);
console.log('|---|---:|---:|---:|---|');
for (const row of rows) {
  if (!baseline) break;
  console.log(
    `| ${row.name} | ${format(row.pushPerSecond)} | ${format(row.popAckPerSecond)} | ${format(row.pushOnePerSecond)} | ${ratio(row.pushPerSecond, baseline.pushPerSecond)}, ${ratio(row.popAckPerSecond, baseline.popAckPerSecond)}, ${ratio(row.pushOnePerSecond, baseline.pushOnePerSecond)} |`,
  );
}

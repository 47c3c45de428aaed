/*
 * What the outbox costs (issue #25, acceptance "benchmarks"; docs/benchmarks.md, "Outbox"):
 *
 * - the queue -> topic bridge: messages pushed to a bridged queue (16 partitions) become hub
 *   updates; its throughput (messages -> updates per second, from the first push to the last
 *   update in the hub's history) against a plain push of the same messages to a queue without a
 *   bridge, and the bridged push's own rate (what a producer sees);
 * - transactions across Redis Cluster slots (ack a message of one queue, push one to another
 *   queue in another slot) against the same transaction within one slot (the push to the acked
 *   message's own queue), on a 3-primary Cluster without slot grouping: transactions per second,
 *   latency p50/p99, and the apply window (herald_broker_transaction_apply_window_seconds: from
 *   the commit to the last other slot applied, what a reader of that slot may miss meanwhile).
 *
 *   npm run build && node --import tsx test/bench/outbox.bench.ts
 *
 * Nodes are child processes (services/*\/dist/main.js); the client is an undici Pool
 * (CONCURRENCY connections). Two rounds, the order of the compared rows alternating. Run on a
 * quiet machine: the load average is printed.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { createHmac } from 'node:crypto';
import { loadavg } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { freePort, RedisCluster, RedisServer, uniquePrefix, waitFor } from '@herald/testkit';
import { Redis } from 'ioredis';
import { Pool } from 'undici';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));
const CONCURRENCY = Number(process.env.BENCH_CONCURRENCY ?? 16);
const BRIDGE_MESSAGES = Number(process.env.BENCH_BRIDGE_MESSAGES ?? 20_000);
const TRANSACTIONS = Number(process.env.BENCH_TRANSACTIONS ?? 6000);
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 2);
const PARTITIONS = 16;
const PUSH_BATCH = 100;
const SECRET = 'outbox-bench-secret-0123456789abcdef0123';
const PAYLOAD = { orderId: 12345, customer: 'c-42', amount: 99.5, items: ['a', 'b', 'c'] };

const children = new Set<ChildProcess>();
process.on('exit', () => {
  for (const child of children) child.kill('SIGKILL');
});

async function startNode(service: 'broker' | 'hub', environment: Record<string, string>): Promise<string> {
  const port = await freePort();
  const child = spawn(process.execPath, [join(ROOT, 'services', service, 'dist', 'main.js')], {
    env: {
      PATH: process.env.PATH ?? '',
      PORT: String(port),
      HOST: '127.0.0.1',
      LOG_LEVEL: 'error',
      ...environment,
    },
    stdio: ['ignore', 'ignore', 'inherit'],
  });
  children.add(child);
  child.once('exit', () => children.delete(child));
  const base = `http://127.0.0.1:${port}`;
  await waitFor(async () => (await fetch(`${base}/readyz`).catch(() => undefined))?.status === 200, {
    what: `${service} node`,
    timeoutMs: 30_000,
  });
  return base;
}

async function stopAll(): Promise<void> {
  await Promise.all(
    [...children].map(async (child) => {
      child.kill('SIGTERM');
      await new Promise((resolve) => child.once('exit', resolve));
    }),
  );
}

async function request(pool: Pool, method: 'GET' | 'POST', path: string, body?: unknown) {
  const response = await pool.request({
    method,
    path,
    ...(body === undefined
      ? {}
      : { headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) }),
  });
  const text = await response.body.text();
  return { status: response.statusCode, body: text ? JSON.parse(text) : undefined };
}

/** Runs `count` calls of `one`, CONCURRENCY at a time; per call latency (ms), and the seconds. */
async function drive(count: number, one: (index: number) => Promise<void>) {
  let next = 0;
  const latencies: number[] = [];
  const started = performance.now();
  await Promise.all(
    Array.from({ length: CONCURRENCY }, async () => {
      for (let index = next++; index < count; index = next++) {
        const at = performance.now();
        await one(index);
        latencies.push(performance.now() - at);
      }
    }),
  );
  return { seconds: (performance.now() - started) / 1000, latencies: latencies.sort((a, b) => a - b) };
}

const quantile = (sorted: readonly number[], q: number) =>
  sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))] ?? Number.NaN;

/** Pushes `messages` to `queue` over PARTITIONS partitions in batches; msg/s. */
async function pushAll(pool: Pool, queue: string, messages: number): Promise<number> {
  const { seconds } = await drive(messages / PUSH_BATCH, async (index) => {
    const items = Array.from({ length: PUSH_BATCH }, (_, i) => ({
      queue,
      partition: `p${(index * PUSH_BATCH + i) % PARTITIONS}`,
      payload: { ...PAYLOAD, n: index * PUSH_BATCH + i },
    }));
    const answer = await request(pool, 'POST', '/api/v1/push', { items });
    if (answer.status !== 201) throw new Error(`push answered ${answer.status}`);
  });
  return messages / seconds;
}

interface BridgeRow {
  plain: number;
  bridgedPush: number;
  bridge: number;
  /** The hub's own rate: CONCURRENCY publishers posting straight to it (what the relay is bound by). */
  direct: number;
  relayDelayP99: number;
}

/** A publisher token for the hub (HS256 over SECRET), as the broker signs its own. */
function publisherToken(): string {
  const encode = (value: object) => Buffer.from(JSON.stringify(value)).toString('base64url');
  const body = `${encode({ alg: 'HS256', typ: 'JWT' })}.${encode({ mercure: { publish: [{ match: '*' }] } })}`;
  return `${body}.${createHmac('sha256', SECRET).update(body).digest('base64url')}`;
}

/** Updates per second, CONCURRENCY publishers posting `count` updates straight to the hub. */
async function publishDirect(hub: string, count: number): Promise<number> {
  const pool = new Pool(hub, { connections: CONCURRENCY });
  const authorization = `Bearer ${publisherToken()}`;
  const { seconds } = await drive(count, async (index) => {
    const response = await pool.request({
      method: 'POST',
      path: '/.well-known/mercure',
      headers: { 'content-type': 'application/x-www-form-urlencoded', authorization },
      body: new URLSearchParams({
        topic: `https://example.com/direct/p${index % PARTITIONS}`,
        data: JSON.stringify(PAYLOAD),
      }).toString(),
    });
    await response.body.text();
    if (response.statusCode !== 200) throw new Error(`publish answered ${response.statusCode}`);
  });
  await pool.close();
  return count / seconds;
}

/** One round of the bridge rows on a fresh broker and hub pair. */
async function bridgeRound(redisUrl: string, order: 'plain-first' | 'bridged-first'): Promise<BridgeRow> {
  const hubPrefix = uniquePrefix('bench-hub');
  const hub = await startNode('hub', {
    REDIS_URL: redisUrl,
    MERCURE_REDIS_PREFIX: hubPrefix,
    MERCURE_DEV: '1',
    MERCURE_PUBLISHER_JWT_KEY: SECRET,
    MERCURE_SUBSCRIBER_JWT_KEY: SECRET,
    MERCURE_HISTORY_SIZE: String(BRIDGE_MESSAGES * 4),
  });
  const broker = await startNode('broker', {
    REDIS_URL: redisUrl,
    BROKER_KEY_PREFIX: uniquePrefix('bench-broker'),
    BROKER_HUB_URL: `${hub}/.well-known/mercure`,
    BROKER_HUB_JWT_KEY: SECRET,
  });
  const pool = new Pool(broker, { connections: CONCURRENCY });
  const plainQueue = `plain-${order}`;
  const bridgedQueue = `bridged-${order}`;
  const configured = await request(pool, 'POST', '/api/v1/configure', {
    queue: bridgedQueue,
    options: { bridgeTopic: 'https://example.com/bench/{queue}/{partition}' },
  });
  if (configured.status !== 200) throw new Error(`configure answered ${configured.status}`);
  // Warm-up on a queue of its own.
  await pushAll(pool, 'warmup', 2000);
  const redis = new Redis(redisUrl);
  const historyLength = async () => {
    let total = 0;
    for (const key of await redis.keys(`${hubPrefix}*history`)) total += await redis.xlen(key);
    return total;
  };
  const before = await historyLength();
  let plain = 0;
  let bridgedPush = 0;
  let bridge = 0;
  const runPlain = async () => {
    plain = await pushAll(pool, plainQueue, BRIDGE_MESSAGES);
  };
  const runBridged = async () => {
    const started = performance.now();
    bridgedPush = await pushAll(pool, bridgedQueue, BRIDGE_MESSAGES);
    await waitFor(async () => (await historyLength()) - before >= BRIDGE_MESSAGES, {
      what: 'every update in the hub history',
      timeoutMs: 600_000,
      intervalMs: 20,
    });
    bridge = BRIDGE_MESSAGES / ((performance.now() - started) / 1000);
  };
  if (order === 'plain-first') {
    await runPlain();
    await runBridged();
  } else {
    await runBridged();
    await runPlain();
  }
  const metrics = await (await fetch(`${broker}/metrics`)).text();
  const relayDelayP99 = histogramQuantile(metrics, 'herald_outbox_relay_delay_seconds', 0.99);
  const direct = await publishDirect(hub, BRIDGE_MESSAGES / 2);
  await pool.close();
  redis.disconnect();
  await stopAll();
  return { plain, bridgedPush, bridge, direct, relayDelayP99 };
}

/** A quantile (seconds) of a prom-client histogram in /metrics text, from its buckets. */
function histogramQuantile(metrics: string, name: string, q: number): number {
  const buckets = [
    ...metrics.matchAll(new RegExp(`^${name}_bucket\\{le="([^"]+)"[^}]*\\} (\\S+)`, 'gm')),
  ].map(
    (match) => [match[1] === '+Inf' ? Number.POSITIVE_INFINITY : Number(match[1]), Number(match[2])] as const,
  );
  const total = buckets.at(-1)?.[1] ?? 0;
  if (total === 0) return Number.NaN;
  return buckets.find(([, count]) => count >= q * total)?.[0] ?? Number.NaN;
}

interface TransactionRow {
  rate: number;
  p50: number;
  p99: number;
  windowP50?: number;
  windowP99?: number;
}

/**
 * Transactions on `broker`: each acks one message of `source` (leased by a pop of 50) and
 * pushes one message to `target(index)`.
 */
async function transactions(
  broker: string,
  source: string,
  target: (index: number) => string,
): Promise<TransactionRow> {
  const pool = new Pool(broker, { connections: CONCURRENCY * 2 });
  // One partition per worker so the workers' pops never wait on each other's leases.
  const items = Array.from({ length: TRANSACTIONS }, (_, index) => ({
    queue: source,
    partition: `w${index % CONCURRENCY}`,
    payload: { ...PAYLOAD, n: index },
  }));
  for (let start = 0; start < items.length; start += 1000) {
    const answer = await request(pool, 'POST', '/api/v1/push', { items: items.slice(start, start + 1000) });
    if (answer.status !== 201) throw new Error(`push answered ${answer.status}`);
  }
  const leased: { transactionId: string; partitionId: string; leaseId: string }[][] = Array.from(
    { length: CONCURRENCY },
    () => [],
  );
  const latencies: number[] = [];
  const started = performance.now();
  await Promise.all(
    Array.from({ length: CONCURRENCY }, async (_, worker) => {
      const mine = leased[worker] as { transactionId: string; partitionId: string; leaseId: string }[];
      // Each worker runs the transactions of its own partition's messages.
      for (let index = worker; index < TRANSACTIONS; index += CONCURRENCY) {
        if (mine.length === 0) {
          const popped = await request(
            pool,
            'GET',
            `/api/v1/pop/queue/${encodeURIComponent(source)}/partition/w${worker}?batch=50`,
          );
          if (popped.status !== 200) throw new Error(`pop answered ${popped.status}`);
          mine.push(...popped.body.messages);
        }
        const message = mine.shift() as { transactionId: string; partitionId: string; leaseId: string };
        const at = performance.now();
        const answer = await request(pool, 'POST', '/api/v1/transaction', {
          operations: [
            {
              type: 'ack',
              transactionId: message.transactionId,
              partitionId: message.partitionId,
              leaseId: message.leaseId,
              status: 'completed',
            },
            {
              type: 'push',
              items: [{ queue: target(index), partition: 'out', payload: { ...PAYLOAD, n: index } }],
            },
          ],
        });
        latencies.push(performance.now() - at);
        if (answer.status !== 200 || answer.body.success !== true)
          throw new Error(`transaction answered ${answer.status} ${JSON.stringify(answer.body)}`);
      }
    }),
  );
  const seconds = (performance.now() - started) / 1000;
  await pool.close();
  latencies.sort((a, b) => a - b);
  return { rate: TRANSACTIONS / seconds, p50: quantile(latencies, 0.5), p99: quantile(latencies, 0.99) };
}

function fmt(value: number, digits = 0): string {
  return Number.isFinite(value) ? value.toFixed(digits) : 'n/a';
}

console.log(
  `outbox bench: load average ${loadavg()
    .map((value) => value.toFixed(2))
    .join(' ')} (before)`,
);
console.log(`node ${process.version}, concurrency ${CONCURRENCY}, ${ROUNDS} rounds`);

const server = await RedisServer.start();
const bridgeRows: BridgeRow[] = [];
for (let round = 0; round < ROUNDS; round++) {
  bridgeRows.push(await bridgeRound(server.url, round % 2 === 0 ? 'plain-first' : 'bridged-first'));
}
await server.destroy();

const cluster = await RedisCluster.start({ primaries: 3, replicasPerPrimary: 0 });
const transactionRows: { same: TransactionRow; across: TransactionRow }[] = [];
for (let round = 0; round < ROUNDS; round++) {
  const broker = await startNode('broker', {
    REDIS_CLUSTER_NODES: cluster.nodes.join(','),
    BROKER_KEY_PREFIX: uniquePrefix('bench-tx'),
  });
  const rows: { same?: TransactionRow; across?: TransactionRow } = {};
  const runSame = async () => {
    rows.same = await transactions(broker, `same-${round}`, () => `same-${round}`);
  };
  const runAcross = async () => {
    // Targets spread over other queues (other slots: spread over the 3 shards).
    rows.across = await transactions(
      broker,
      `across-${round}`,
      (index) => `across-target-${round}-${index % 32}`,
    );
    const metrics = await (await fetch(`${broker}/metrics`)).text();
    rows.across.windowP50 = histogramQuantile(metrics, 'herald_broker_transaction_apply_window_seconds', 0.5);
    rows.across.windowP99 = histogramQuantile(
      metrics,
      'herald_broker_transaction_apply_window_seconds',
      0.99,
    );
  };
  if (round % 2 === 0) {
    await runSame();
    await runAcross();
  } else {
    await runAcross();
    await runSame();
  }
  transactionRows.push(rows as { same: TransactionRow; across: TransactionRow });
  await stopAll();
}
await cluster.stop();

console.log('\n| row | round | value | ratio |');
console.log('|---|---|---|---|');
bridgeRows.forEach((row, round) => {
  console.log(
    `| plain push b${PUSH_BATCH}, ${PARTITIONS} partitions (msg/s) | ${round + 1} | ${fmt(row.plain)} | 1.00 |`,
  );
  console.log(
    `| bridged push b${PUSH_BATCH}, as the producer sees it (msg/s) | ${round + 1} | ${fmt(row.bridgedPush)} | ${fmt(row.bridgedPush / row.plain, 2)} |`,
  );
  console.log(
    `| bridge: messages -> hub updates, end to end (updates/s) | ${round + 1} | ${fmt(row.bridge)} | ${fmt(row.bridge / row.plain, 2)} |`,
  );
  console.log(
    `| hub publish, ${CONCURRENCY} publishers straight to the hub (updates/s) | ${round + 1} | ${fmt(row.direct)} | ${fmt(row.direct / row.plain, 2)} |`,
  );
  console.log(`| bridge against the hub's own rate | ${round + 1} | | ${fmt(row.bridge / row.direct, 2)} |`);
  console.log(
    `| relay delay p99, record -> hub (s, bucket bound) | ${round + 1} | ${fmt(row.relayDelayP99, 3)} | |`,
  );
});
transactionRows.forEach(({ same, across }, round) => {
  console.log(`| transaction ack + push, one slot (txn/s) | ${round + 1} | ${fmt(same.rate)} | 1.00 |`);
  console.log(
    `| transaction ack + push, across slots (txn/s) | ${round + 1} | ${fmt(across.rate)} | ${fmt(across.rate / same.rate, 2)} |`,
  );
  console.log(
    `| latency p50 / p99, one slot (ms) | ${round + 1} | ${fmt(same.p50, 1)} / ${fmt(same.p99, 1)} | |`,
  );
  console.log(
    `| latency p50 / p99, across slots (ms) | ${round + 1} | ${fmt(across.p50, 1)} / ${fmt(across.p99, 1)} | ${fmt(across.p50 / same.p50, 2)} / ${fmt(across.p99 / same.p99, 2)} |`,
  );
  console.log(
    `| apply window p50 / p99, across slots (ms, bucket bounds) | ${round + 1} | ${fmt((across.windowP50 ?? Number.NaN) * 1000, 1)} / ${fmt((across.windowP99 ?? Number.NaN) * 1000, 1)} | |`,
  );
});
console.log(
  `\nload average ${loadavg()
    .map((value) => value.toFixed(2))
    .join(' ')} (after)`,
);
process.exit(0);

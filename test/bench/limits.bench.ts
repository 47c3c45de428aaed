/*
 * What the limits per tenant cost (issue #24, item 2; docs/benchmarks.md, "Limits per tenant"):
 * push batch 1, push batch 100 and hub publishes, each on a node with every limit off and on a
 * node with the limits on (budgets far above the load, so nothing is refused and every request
 * pays for its Lua call), in the same run, alternating the order, two rounds. Optionally a third
 * variant, the services built from an earlier commit (BENCH_BASELINE_DIR=<a checkout with
 * services/*\/dist built>), shows whether "off" changed anything against the code before limits.
 *
 *   npm run build && node --import tsx test/bench/limits.bench.ts
 *
 * Every node is a child process on one private redis-server; one node runs at a time. The client
 * is an undici Pool (16 connections). Run on a quiet machine: the load average is printed.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { createHmac } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { loadavg } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { freePort, RedisServer, waitFor } from '@herald/testkit';
import { Redis } from 'ioredis';
import { Pool } from 'undici';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));
const CONCURRENCY = 16;
const PUSH_B1_REQUESTS = Number(process.env.BENCH_PUSH_B1 ?? 20_000);
const PUSH_B100_REQUESTS = Number(process.env.BENCH_PUSH_B100 ?? 1500);
const PUBLISHES = Number(process.env.BENCH_PUBLISHES ?? 15_000);
const WARMUP = 2000;
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 2);
/** `broker` or `hub` runs that service's rows only (default both). */
const ONLY = process.env.BENCH_ONLY;
const SECRET = 'limits-bench-secret-0123456789abcdef0123';
const PAYLOAD = { orderId: 12345, customer: 'c-42', amount: 99.5, items: ['a', 'b', 'c'] };

interface Variant {
  readonly name: string;
  readonly root: string;
  readonly broker: Record<string, string>;
  readonly hub: Record<string, string>;
}

const variants: Variant[] = [
  { name: 'off', root: ROOT, broker: {}, hub: {} },
  {
    name: 'on',
    root: ROOT,
    broker: { BROKER_LIMIT_PUSH_RATE: '1000000000', BROKER_LIMIT_IN_FLIGHT: '1000000000' },
    hub: { MERCURE_LIMIT_PUBLISH_RATE: '1000000000', MERCURE_LIMIT_SUBSCRIPTIONS: '1000000000' },
  },
];
if (process.env.BENCH_BASELINE_DIR) {
  variants.push({ name: 'before', root: process.env.BENCH_BASELINE_DIR, broker: {}, hub: {} });
}

const redisServer = await RedisServer.start();
const children = new Set<ChildProcess>();
process.on('exit', () => {
  for (const child of children) child.kill('SIGKILL');
});

function hs256(payload: object): string {
  const encode = (value: object) => Buffer.from(JSON.stringify(value)).toString('base64url');
  const body = `${encode({ alg: 'HS256', typ: 'JWT' })}.${encode(payload)}`;
  return `${body}.${createHmac('sha256', SECRET).update(body).digest('base64url')}`;
}

async function startNode(
  service: 'broker' | 'hub',
  root: string,
  environment: Record<string, string>,
): Promise<{ child: ChildProcess; base: string }> {
  const port = await freePort();
  const child = spawn(process.execPath, [join(root, 'services', service, 'dist', 'main.js')], {
    env: {
      PATH: process.env.PATH ?? '',
      PORT: String(port),
      HOST: '127.0.0.1',
      LOG_LEVEL: 'error',
      REDIS_URL: redisServer.url,
      TRUSTED_PROXIES: '127.0.0.1',
      MERCURE_PUBLISHER_JWT_KEY: SECRET,
      MERCURE_SUBSCRIBER_JWT_KEY: SECRET,
      BROKER_KEY_PREFIX: `bench:${service}:${port}:`,
      MERCURE_REDIS_PREFIX: `bench:hub:${port}:`,
      ...environment,
    },
    stdio: ['ignore', 'ignore', 'inherit'],
  });
  children.add(child);
  nodePid = child.pid ?? 0;
  child.once('exit', () => children.delete(child));
  const base = `http://127.0.0.1:${port}`;
  await waitFor(async () => (await fetch(`${base}/readyz`).catch(() => undefined))?.status === 200, {
    what: `${service} node`,
    timeoutMs: 30_000,
  });
  return { child, base };
}

async function stopNode(child: ChildProcess): Promise<void> {
  child.kill('SIGTERM');
  await new Promise((resolve) => child.once('exit', resolve));
}

/** CPU time (user + system, ms) a process has used: /proc/<pid>/stat, in clock ticks of 10 ms. */
function cpuMs(pid: number): number {
  const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]?.split(' ') ?? [];
  return (Number(fields[11]) + Number(fields[12])) * 10;
}

/** The node under test: its CPU is read around each measured window. */
let nodePid = 0;

/**
 * Runs `requests` requests, CONCURRENCY at a time; returns requests per second and the node's
 * CPU µs per request (steadier than the rate on a shared 2-core machine: the other processes'
 * load moves the rate, much less the node's own work per request).
 */
async function drive(
  requests: number,
  one: (index: number) => Promise<void>,
): Promise<{ rate: number; cpuUs: number }> {
  let next = 0;
  const cpuBefore = nodePid ? cpuMs(nodePid) : 0;
  const started = performance.now();
  await Promise.all(
    Array.from({ length: CONCURRENCY }, async () => {
      for (let index = next++; index < requests; index = next++) await one(index);
    }),
  );
  const seconds = (performance.now() - started) / 1000;
  const cpu = nodePid ? cpuMs(nodePid) - cpuBefore : Number.NaN;
  return { rate: requests / seconds, cpuUs: (cpu * 1000) / requests };
}

/** Messages per second, and the node's CPU µs per message. */
async function pushRate(
  base: string,
  batch: number,
  requests: number,
): Promise<{ rate: number; cpuUs: number }> {
  const pool = new Pool(base, { connections: CONCURRENCY });
  const push = async (index: number) => {
    const items = Array.from({ length: batch }, (_, i) => ({
      queue: `tenant${index % 8}.orders`,
      payload: { ...PAYLOAD, i },
    }));
    const response = await pool.request({
      method: 'POST',
      path: '/api/v1/push',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ items }),
    });
    await response.body.text();
    if (response.statusCode !== 201) throw new Error(`push answered ${response.statusCode}`);
  };
  await drive(WARMUP / batch, push);
  const { rate, cpuUs } = await drive(requests, push);
  await pool.close();
  return { rate: rate * batch, cpuUs: cpuUs / batch };
}

/** Updates per second, and the node's CPU µs per update. */
async function publishRate(base: string, requests: number): Promise<{ rate: number; cpuUs: number }> {
  const pool = new Pool(base, { connections: CONCURRENCY });
  const tokens = Array.from({ length: 8 }, (_, i) =>
    hs256({ sub: `publisher-${i}`, mercure: { publish: [{ match: '*' }] } }),
  );
  const publish = async (index: number) => {
    const response = await pool.request({
      method: 'POST',
      path: '/.well-known/mercure',
      headers: {
        'content-type': 'application/x-www-form-urlencoded',
        authorization: `Bearer ${tokens[index % tokens.length]}`,
        'x-forwarded-proto': 'https',
      },
      body: new URLSearchParams({
        topic: 'https://example.com/bench',
        data: JSON.stringify(PAYLOAD),
      }).toString(),
    });
    await response.body.text();
    if (response.statusCode !== 200) throw new Error(`publish answered ${response.statusCode}`);
  };
  await drive(WARMUP, publish);
  const result = await drive(requests, publish);
  await pool.close();
  return result;
}

const ROWS = [
  'push b1 (msg/s)',
  'push b1 (node CPU µs/msg)',
  'push b100 (msg/s)',
  'push b100 (node CPU µs/msg)',
  'publish (updates/s)',
  'publish (node CPU µs/update)',
] as const;
type Row = 'push b1' | 'push b100' | 'publish';
const UNITS: Record<Row, [string, string]> = {
  'push b1': ['push b1 (msg/s)', 'push b1 (node CPU µs/msg)'],
  'push b100': ['push b100 (msg/s)', 'push b100 (node CPU µs/msg)'],
  publish: ['publish (updates/s)', 'publish (node CPU µs/update)'],
};
const results = new Map<string, number[]>();
const record = (row: Row, variant: string, value: { rate: number; cpuUs: number }) => {
  for (const [name, number] of [
    [UNITS[row][0], value.rate],
    [UNITS[row][1], value.cpuUs],
  ] as const) {
    const key = `${name}\n${variant}`;
    results.set(key, [...(results.get(key) ?? []), number]);
  }
};

console.log(
  `load average before: ${loadavg()
    .map((n) => n.toFixed(2))
    .join(' ')}`,
);
for (let round = 0; round < ROUNDS; round++) {
  const order = round % 2 === 0 ? variants : [...variants].reverse();
  for (const variant of order) {
    if (ONLY !== 'hub') {
      const broker = await startNode('broker', variant.root, variant.broker);
      record('push b1', variant.name, await pushRate(broker.base, 1, PUSH_B1_REQUESTS));
      record('push b100', variant.name, await pushRate(broker.base, 100, PUSH_B100_REQUESTS));
      await stopNode(broker.child);
    }
    if (ONLY !== 'broker') {
      const hub = await startNode('hub', variant.root, variant.hub);
      record('publish', variant.name, await publishRate(hub.base, PUBLISHES));
      await stopNode(hub.child);
    }
    const admin = new Redis(redisServer.url);
    await admin.flushall();
    admin.disconnect();
  }
}

/** Whole numbers, one decimal below 100 (µs per message of a batch). */
const format = (value: number) => (value < 100 ? value.toFixed(1) : String(Math.round(value)));
const mean = (values: readonly number[]) => values.reduce((a, b) => a + b, 0) / values.length;
const header = [
  'row',
  ...variants.map((v) => `${v.name} (runs)`),
  ...variants.slice(1).map((v) => `${v.name}/off`),
];
const lines = ROWS.filter((row) => results.has(`${row}\noff`)).map((row) => {
  const runs = variants.map((v) => results.get(`${row}\n${v.name}`) ?? []);
  const off = mean(runs[0] ?? []);
  return [
    row,
    ...runs.map((values) => `${format(mean(values))} (${values.map(format).join(', ')})`),
    ...runs.slice(1).map((values) => `${(mean(values) / off).toFixed(2)}×`),
  ];
});
console.log(`\n| ${header.join(' | ')} |\n|${header.map(() => '---').join('|')}|`);
for (const line of lines) console.log(`| ${line.join(' | ')} |`);
console.log(
  `\nload average after: ${loadavg()
    .map((n) => n.toFixed(2))
    .join(' ')}`,
);
await redisServer.stop();

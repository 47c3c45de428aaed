/*
 * Broker benchmark: a fixed workload, one Redis, one run; prints msg/s and ratios against
 * (a) raw Redis Streams through ioredis and (b) BullMQ on the same Redis.
 * Run: node --import tsx test/bench/broker.bench.ts   (build the broker first)
 *
 * What each row measures (client, broker and Redis share the machine's cores):
 * - broker: HTTP through an undici Pool (keep-alive, 16 connections). Not fetch: fetch tops out
 *   near 3k req/s on one core here (it was the ceiling of an earlier "/health at 3.8k req/s"),
 *   while the Pool reaches ~12k req/s with the client then at 100% of a core (the "GET /health"
 *   row is that HTTP floor). Producers read every push reply; consumers parse every message.
 * - raw streams: the same work straight on Redis with ioredis (pipelined XADD; XREADGROUP +
 *   XACK, parsing every payload), no dedup, leases, retries or HTTP: the ceiling.
 * - pop+ack: consumers pop with wait=false, as raw XREADGROUP does not block: a long-poll pop
 *   parked at the end of a row (every remaining partition leased by another consumer, then
 *   nothing left) waited out its timeout inside the timed window, up to 200 ms of a 0.7 s row.
 * - BullMQ: Queue.add/addBulk; one Worker, concurrency 16 (no batch consume in BullMQ OSS).
 * - CPU client / broker / Redis: each process's CPU time over the broker row's wall time (100% =
 *   one core; from process.cpuUsage, /proc/<pid>/stat and INFO cpu). The one near 100% sets the
 *   rate (the client must not be it); all well below it means the cores are taken by others.
 * - push b1 is also given against GET /health req/s (one request per message: the HTTP floor).
 * - peak RSS: the broker child's VmHWM after the rows that ran.
 *
 * Environment (for profiling; the defaults run every row):
 * - BENCH_ROWS: comma list of health, push, popack, partitions, groups.
 * - BENCH_POPACK_TOTAL: messages of the pop+ack batch 100 row (default 40,000, ~0.5 s here; the
 *   broker's peak RSS grows with longer rows, so the default keeps the figure comparable).
 * - BENCH_BROKER_ARGS: extra node arguments for the broker child, e.g.
 *   `--cpu-prof --cpu-prof-dir=/tmp/prof` (the profile is written when the child exits).
 * - BENCH_BROKER_ENV: extra environment of the broker child, `NAME=value` separated by spaces,
 *   e.g. `MALLOC_ARENA_MAX=2`.
 */
import { readFileSync } from 'node:fs';
import { RedisServer } from '@herald/testkit';
import { Queue, Worker } from 'bullmq';
import { Redis } from 'ioredis';
import { Pool } from 'undici';
import { environmentFromWords, startBrokerChild } from './broker-child.js';

const CONCURRENCY = 16;
const CONSUMERS = 8;
const PAYLOAD = { orderId: 12345, customer: 'c-42', amount: 99.5, items: ['a', 'b', 'c'] };

/** Messages of the pop+ack batch 100 row (BENCH_POPACK_TOTAL: longer runs, steadier rates). */
const POPACK_TOTAL = Number(process.env.BENCH_POPACK_TOTAL ?? 40_000);
const ROWS = new Set((process.env.BENCH_ROWS ?? 'health,push,popack,partitions,groups').split(','));
const brokerArgs = (process.env.BENCH_BROKER_ARGS ?? '').split(' ').filter((arg) => arg !== '');
const brokerEnvironment = environmentFromWords((process.env.BENCH_BROKER_ENV ?? '').split(' '));

const redisServer = await RedisServer.start();
const { child, url: base } = await startBrokerChild({
  redisUrl: redisServer.url,
  nodeArguments: brokerArgs,
  environment: brokerEnvironment,
});
const http = new Pool(base, { connections: CONCURRENCY });
const redis = new Redis(redisServer.url);
/** Connections handed to BullMQ (it does not close connections it was given). */
const bullConnections: Redis[] = [];
function bullConnection(): Redis {
  const connection = new Redis(redisServer.url, { maxRetriesPerRequest: null });
  bullConnections.push(connection);
  return connection;
}

async function request(
  method: 'GET' | 'POST',
  path: string,
  body?: unknown,
): Promise<{ status: number; json: any }> {
  const response = await http.request({
    method,
    path,
    ...(body !== undefined
      ? { body: JSON.stringify(body), headers: { 'content-type': 'application/json' } }
      : {}),
  });
  const text = await response.body.text();
  return { status: response.statusCode, json: text ? JSON.parse(text) : undefined };
}

/** CPU shares (1 = one full core) of the client, broker child and Redis during the last timed row. */
let shares = { client: 0, broker: 0, redis: 0 };

/** CPU seconds of the broker child so far (utime + stime from /proc, in clock ticks of 10 ms). */
function brokerCpuSeconds(): number {
  const fields = readFileSync(`/proc/${child.pid}/stat`, 'utf8').split(') ')[1]?.split(' ') ?? [];
  return (Number(fields[11]) + Number(fields[12])) / 100;
}

async function redisCpuSeconds(): Promise<number> {
  const info = await redis.info('cpu');
  const value = (field: string) => Number(new RegExp(`${field}:([\\d.]+)`).exec(info)?.[1] ?? 0);
  return value('used_cpu_user') + value('used_cpu_sys');
}

/** Times `run`; returns msg/s, and leaves each process's CPU share in `shares`. */
async function timed(messages: number, run: () => Promise<void>): Promise<number> {
  const redisBefore = await redisCpuSeconds();
  const brokerBefore = brokerCpuSeconds();
  const clientBefore = process.cpuUsage();
  const started = performance.now();
  await run();
  const seconds = (performance.now() - started) / 1000;
  const client = process.cpuUsage(clientBefore);
  shares = {
    client: (client.user + client.system) / 1e6 / seconds,
    broker: (brokerCpuSeconds() - brokerBefore) / seconds,
    redis: ((await redisCpuSeconds()) - redisBefore) / seconds,
  };
  return messages / seconds;
}

async function parallel(
  tasks: number,
  concurrency: number,
  work: (index: number) => Promise<void>,
): Promise<void> {
  let next = 0;
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      while (next < tasks) await work(next++);
    }),
  );
}

let run = 0;
const name = (label: string) => `bench.${label}.${++run}`;

async function brokerPush(
  batch: number,
  total: number,
  partitions = 16,
  queue = name('push'),
): Promise<number> {
  return timed(total, () =>
    parallel(total / batch, CONCURRENCY, async (round) => {
      const items = Array.from({ length: batch }, (_, i) => ({
        queue,
        partition: `p${(round * batch + i) % partitions}`,
        payload: PAYLOAD,
      }));
      const reply = await request('POST', '/api/v1/push', { items });
      if (reply.status !== 201) throw new Error(`push ${reply.status}`);
    }),
  );
}

async function brokerConsume(
  queue: string,
  batch: number,
  total: number,
  consumers = CONSUMERS,
  group = '',
  partitionsPerPop = 1,
): Promise<number> {
  let consumed = 0;
  const groupQuery = group ? `&consumerGroup=${group}` : '';
  return timed(total, () =>
    Promise.all(
      Array.from({ length: consumers }, async () => {
        while (consumed < total) {
          const reply = await request(
            'GET',
            `/api/v1/pop/queue/${queue}?batch=${batch}&partitions=${partitionsPerPop}&wait=false${groupQuery}`,
          );
          if (reply.status === 204) continue;
          const messages = reply.json.messages as any[];
          consumed += messages.length;
          const ack = await request('POST', '/api/v1/ack/batch', {
            consumerGroup: group || null,
            acknowledgments: messages.map((m) => ({
              transactionId: m.transactionId,
              partitionId: m.partitionId,
              leaseId: m.leaseId,
            })),
          });
          if (ack.status !== 200) throw new Error(`ack ${ack.status}`);
        }
      }),
    ).then(() => undefined),
  );
}

async function rawPush(batch: number, total: number): Promise<number> {
  const key = name('raw');
  const data = JSON.stringify(PAYLOAD);
  return timed(total, () =>
    parallel(total / batch, CONCURRENCY, async (round) => {
      const pipeline = redis.pipeline();
      for (let i = 0; i < batch; i++) pipeline.xadd(`${key}:${(round * batch + i) % 16}`, '*', 'd', data);
      await pipeline.exec();
    }),
  );
}

async function rawConsume(batch: number, total: number): Promise<number> {
  const key = name('rawc');
  const data = JSON.stringify(PAYLOAD);
  for (let s = 0; s < 16; s++) await redis.xgroup('CREATE', `${key}:${s}`, 'g', '0', 'MKSTREAM');
  for (let sent = 0; sent < total; sent += 1000) {
    const pipeline = redis.pipeline();
    for (let i = 0; i < 1000; i++) pipeline.xadd(`${key}:${(sent + i) % 16}`, '*', 'd', data);
    await pipeline.exec();
  }
  let consumed = 0;
  const clients = Array.from({ length: CONSUMERS }, () => new Redis(redisServer.url));
  const rate = await timed(total, () =>
    Promise.all(
      clients.map(async (client, c) => {
        let stream = c;
        while (consumed < total) {
          stream = (stream + 1) % 16;
          const reply = (await client.xreadgroup(
            'GROUP',
            'g',
            `c${c}`,
            'COUNT',
            batch,
            'STREAMS',
            `${key}:${stream}`,
            '>',
          )) as [string, [string, string[]][]][] | null;
          const entries = reply?.[0]?.[1] ?? [];
          if (entries.length === 0) continue;
          // Every payload is decoded, as the broker's consumers decode every message.
          for (const entry of entries) JSON.parse(entry[1][1] ?? 'null');
          consumed += entries.length;
          await client.xack(`${key}:${stream}`, 'g', ...entries.map((e) => e[0]));
        }
      }),
    ).then(() => undefined),
  );
  await Promise.all(clients.map((client) => client.quit()));
  return rate;
}

async function bullPush(batch: number, total: number): Promise<number> {
  const queue = new Queue(name('bull'), {
    connection: bullConnection(),
    prefix: '{bench}',
  });
  const rate = await timed(total, () =>
    parallel(total / batch, CONCURRENCY, async () => {
      if (batch === 1) await queue.add('job', PAYLOAD);
      else await queue.addBulk(Array.from({ length: batch }, () => ({ name: 'job', data: PAYLOAD })));
    }),
  );
  await queue.close();
  return rate;
}

async function bullConsume(total: number): Promise<number> {
  const queueName = name('bullc');
  const queue = new Queue(queueName, { connection: bullConnection(), prefix: '{bench}' });
  for (let sent = 0; sent < total; sent += 1000) {
    await queue.addBulk(
      Array.from({ length: 1000 }, () => ({ name: 'job', data: PAYLOAD, opts: { removeOnComplete: true } })),
    );
  }
  let done = 0;
  let finish: () => void = () => undefined;
  const finished = new Promise<void>((resolve) => {
    finish = resolve;
  });
  const started = performance.now();
  const worker = new Worker(
    queueName,
    async () => {
      if (++done >= total) finish();
    },
    {
      connection: bullConnection(),
      prefix: '{bench}',
      concurrency: CONSUMERS * 2,
    },
  );
  await finished;
  const rate = total / ((performance.now() - started) / 1000);
  await worker.close();
  await queue.close();
  return rate;
}

function rss(): number {
  const status = readFileSync(`/proc/${child.pid}/status`, 'utf8');
  return Number(/VmHWM:\s+(\d+)/.exec(status)?.[1] ?? 0) / 1024;
}

type Row = [string, string, string, string, string, string, string];
const rows: Row[] = [];
const fmt = (n: number) => (n >= 100 ? Math.round(n).toLocaleString('en-US') : n.toFixed(1));
const ratio = (a: number, b: number) => `${(a / b).toFixed(2)}x`;
const percent = (share: number) => `${Math.round(share * 100)}%`;
const cpu = () => `${percent(shares.client)} / ${percent(shares.broker)} / ${percent(shares.redis)}`;

let health = 0;
if (ROWS.has('health') || ROWS.has('push')) {
  const requests = 20_000;
  health = await timed(requests, () =>
    parallel(requests, 2 * CONCURRENCY, async () => {
      const reply = await request('GET', '/health');
      if (reply.status !== 200) throw new Error(`health ${reply.status}`);
    }),
  );
  rows.push(['GET /health (req/s, HTTP floor)', fmt(health), '', '', '', '', cpu()]);
}

if (ROWS.has('push')) {
  for (const batch of [1, 10, 100]) {
    const total = batch === 1 ? 4000 : batch === 10 ? 20_000 : 50_000;
    const broker = await brokerPush(batch, total);
    const brokerCpu = cpu();
    const raw = await rawPush(batch, total);
    const bull = await bullPush(batch, total);
    rows.push([
      `push, batch ${batch}`,
      fmt(broker),
      fmt(raw),
      fmt(bull),
      ratio(broker, raw),
      ratio(broker, bull),
      brokerCpu,
    ]);
    if (batch === 1) rows.push(['push, batch 1 vs GET /health', ratio(broker, health), '', '', '', '', '']);
  }
}
if (ROWS.has('popack')) {
  const bullConsumeRate = await bullConsume(20_000);
  for (const batch of [1, 10, 100]) {
    const total = batch === 1 ? 3000 : batch === 10 ? 15_000 : POPACK_TOTAL;
    const queue = name('consume');
    await brokerPush(100, total, 16, queue);
    const broker = await brokerConsume(queue, batch, total);
    const brokerCpu = cpu();
    // Five times the broker's messages: at 40,000 the raw row lasted under 0.1 s, and its rate
    // moved by a third between runs.
    const raw = await rawConsume(batch, total * 5);
    rows.push([
      `pop+ack, batch ${batch}`,
      fmt(broker),
      fmt(raw),
      fmt(bullConsumeRate),
      ratio(broker, raw),
      ratio(broker, bullConsumeRate),
      brokerCpu,
    ]);
  }
}
if (ROWS.has('partitions')) {
  for (const partitions of [1, 10_000]) {
    const total = 20_000;
    const queue = name(`parts${partitions}`);
    const push = await brokerPush(100, total, partitions, queue);
    const consume = await brokerConsume(queue, 100, total, CONSUMERS, '', partitions === 1 ? 1 : 50);
    rows.push([
      `${partitions} partitions: push b100 / pop+ack b100`,
      fmt(push),
      fmt(consume),
      '',
      '',
      '',
      cpu(),
    ]);
  }
}
if (ROWS.has('groups')) {
  for (const groups of [1, 10]) {
    const total = 10_000;
    const queue = name(`groups${groups}`);
    await brokerPush(100, total, 16, queue);
    const started = performance.now();
    await Promise.all(
      Array.from({ length: groups }, (_, g) =>
        brokerConsume(queue, 100, total, Math.max(2, Math.floor(CONSUMERS / groups) + 1), `g${g}`),
      ),
    );
    const deliveries = (total * groups) / ((performance.now() - started) / 1000);
    rows.push([`${groups} consumer group(s): deliveries/s (b100)`, fmt(deliveries), '', '', '', '', '']);
  }
}
rows.push(['broker peak RSS (MB)', rss().toFixed(1), '', '', '', '', '']);

const header = [
  'workload',
  'broker msg/s',
  'raw streams',
  'BullMQ',
  'vs raw',
  'vs BullMQ',
  'CPU client / broker / Redis',
];
const widths = header.map((h, i) => Math.max(h.length, ...rows.map((r) => r[i]?.length ?? 0)));
const line = (cells: string[]) => `| ${cells.map((c, i) => c.padEnd(widths[i] as number)).join(' | ')} |`;
console.log(line(header));
console.log(`|${widths.map((w) => '-'.repeat(w + 2)).join('|')}|`);
for (const row of rows) console.log(line(row));
console.log(
  '\n(pop+ack BullMQ column: one Worker, concurrency 16, no batching in BullMQ OSS — the same figure for every batch size)',
);
console.log('(partition rows: column 2 = push msg/s, column 3 = pop+ack msg/s, both through the broker)');
console.log(
  '(CPU: of the benchmark process, the broker child and redis-server while the broker row ran; 100% = one core)',
);

await http.close();
await redis.quit();
await Promise.all(bullConnections.map((connection) => connection.quit()));
child.kill('SIGTERM');
await new Promise((resolve) => child.once('exit', resolve));
await redisServer.destroy();

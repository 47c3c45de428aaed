/*
 * Peer benchmark (issue #26): the same rows against a Herald broker and any server speaking
 * Queen's HTTP API given by URL, on one machine, with the same HTTP load generator, in
 * alternating order, two runs; prints msg/s, request p50/p99, CPU microseconds per message of
 * each side's server and store, and server RSS, with Herald/peer ratios.
 *
 *   QUEEN_URL=http://127.0.0.1:26632 QUEEN_PID=<server pid> QUEEN_STORE_PID=<postmaster pid> \
 *     node --import tsx test/bench/peer.bench.ts          (build the broker first)
 *
 * Without QUEEN_URL it does nothing and says so. Queen's server built from source on a private
 * PostgreSQL: ../shared/tools/queen-peer/ (outside this repository; its start.sh writes the pids
 * to $WORK/pids/queen.pid and postgres.pid). Without the pids the peer's CPU and RSS columns
 * are blank.
 *
 * Herald: a private redis-server (AOF on, `appendfsync` BENCH_REDIS_APPENDFSYNC, default
 * everysec) and one broker child started with the Node flags of the chart (BROKER_NODE_FLAGS
 * below; BENCH_BROKER_ARGS replaces them).
 * The store's CPU: Redis's INFO cpu; the peer's store: the PostgreSQL postmaster and its
 * children from /proc (backends that exit during a row are not counted: Queen keeps a pool).
 *
 * Rows (BENCH_SECONDS each, default 20; 10 partitions):
 * - push b1: 16 concurrent clients, one message per request;
 * - push b100: 16 concurrent clients, 100 messages per request;
 * - pop b100 + ack: 10 concurrent consumers on a queue filled beforehand (not timed), each pop of
 *   up to 100 messages acknowledged with one batch ack.
 * Run only on a quiet machine (no test suite, no helper): the load average is printed.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { loadavg } from 'node:os';
import { RedisServer } from '@herald/testkit';
import { Redis } from 'ioredis';
import { Pool } from 'undici';
import { startBrokerChild } from './broker-child.js';

const PEER_URL = process.env.QUEEN_URL;
if (!PEER_URL) {
  console.log(
    'peer.bench: QUEEN_URL is not set: no peer to compare with, nothing run. Start Queen with ' +
      '../shared/tools/queen-peer/start.sh and set QUEEN_URL (and QUEEN_PID, QUEEN_STORE_PID).',
  );
  process.exit(0);
}

/**
 * The Node flags the chart gives the broker (broker.nodeOptions and broker.command;
 * docs/benchmarks.md, "Broker footprint"). The image sets none.
 */
const BROKER_NODE_FLAGS: string[] = ['--max-semi-space-size=8', '--heap-growing-percent=50'];

const SECONDS = Number(process.env.BENCH_SECONDS ?? 20);
const PARTITIONS = 10;
const PRODUCERS = 16;
const CONSUMERS = 10;
const PAYLOAD = { orderId: 12345, customer: 'c-42', amount: 99.5, items: ['a', 'b', 'c'] };
const APPENDFSYNC = process.env.BENCH_REDIS_APPENDFSYNC ?? 'everysec';
const brokerFlags = process.env.BENCH_BROKER_ARGS
  ? process.env.BENCH_BROKER_ARGS.split(' ').filter((flag) => flag !== '')
  : BROKER_NODE_FLAGS;
const CLOCK_TICKS = 100;

/** One side: where to send requests, and how to read its server's and store's CPU and memory. */
interface Side {
  readonly name: string;
  readonly pool: Pool;
  serverCpu(): number | undefined;
  storeCpu(): Promise<number | undefined>;
  /** VmRSS and VmHWM of the server (kB), when known. */
  memory(): { rss: number; hwm: number } | undefined;
}

/** CPU seconds (user + system) of a process from /proc, or undefined when it is gone or unknown. */
function processCpu(pid: number | undefined): number | undefined {
  if (!pid) return undefined;
  try {
    const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]?.split(' ') ?? [];
    return (Number(fields[11]) + Number(fields[12])) / CLOCK_TICKS;
  } catch {
    return undefined;
  }
}

/** CPU seconds of a process and its children alive now (the PostgreSQL postmaster's backends). */
function treeCpu(root: number | undefined): number | undefined {
  if (!root) return undefined;
  let total = processCpu(root);
  if (total === undefined) return undefined;
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const fields = readFileSync(`/proc/${entry}/stat`, 'utf8').split(') ')[1]?.split(' ') ?? [];
      if (Number(fields[1]) === root) total += (Number(fields[11]) + Number(fields[12])) / CLOCK_TICKS;
    } catch {
      // Exited meanwhile.
    }
  }
  return total;
}

function processMemory(pid: number | undefined): { rss: number; hwm: number } | undefined {
  if (!pid) return undefined;
  try {
    const status = readFileSync(`/proc/${pid}/status`, 'utf8');
    const field = (name: string) => Number(new RegExp(`${name}:\\s+(\\d+)`).exec(status)?.[1]);
    return { rss: field('VmRSS'), hwm: field('VmHWM') };
  } catch {
    return undefined;
  }
}

// ---- Herald: a private Redis and one broker child -------------------------------------------
const redisServer = await RedisServer.start({
  extraArguments: ['--appendonly', 'yes', '--appendfsync', APPENDFSYNC],
});
const redis = new Redis(redisServer.url);
const { child, url: heraldUrl } = await startBrokerChild({
  redisUrl: redisServer.url,
  nodeArguments: brokerFlags,
});

const herald: Side = {
  name: 'Herald',
  pool: new Pool(heraldUrl, { connections: PRODUCERS }),
  serverCpu: () => processCpu(child.pid),
  async storeCpu() {
    const info = await redis.info('cpu');
    const value = (name: string) => Number(new RegExp(`${name}:([\\d.]+)`).exec(info)?.[1] ?? 0);
    return value('used_cpu_user') + value('used_cpu_sys');
  },
  memory: () => processMemory(child.pid),
};
const peerPid = Number(process.env.QUEEN_PID) || undefined;
const peerStorePid = Number(process.env.QUEEN_STORE_PID) || undefined;
const peer: Side = {
  name: 'peer',
  pool: new Pool(PEER_URL, { connections: PRODUCERS }),
  serverCpu: () => processCpu(peerPid),
  storeCpu: async () => treeCpu(peerStorePid),
  memory: () => processMemory(peerPid),
};

async function call(side: Side, method: 'GET' | 'POST', path: string, body?: unknown) {
  const response = await side.pool.request({
    method,
    path,
    ...(body === undefined
      ? {}
      : { body: JSON.stringify(body), headers: { 'content-type': 'application/json' } }),
  });
  const text = await response.body.text();
  if (response.statusCode >= 400)
    throw new Error(`${side.name} ${method} ${path}: ${response.statusCode} ${text}`);
  return { status: response.statusCode, json: text ? JSON.parse(text) : undefined };
}

// ---- rows -------------------------------------------------------------------------------------
interface Measure {
  messages: number;
  seconds: number;
  latencies: number[];
  serverCpu?: number;
  storeCpu?: number;
  rss?: number;
}

let queueCounter = 0;
const queueName = (label: string) => `peer-${label}-${process.pid}-${++queueCounter}`;

/** Runs `workers` loops of `step` (messages done per call) for SECONDS; measures the side meanwhile. */
async function measure(side: Side, workers: number, step: () => Promise<number>): Promise<Measure> {
  const serverBefore = side.serverCpu();
  const storeBefore = await side.storeCpu();
  const latencies: number[] = [];
  let messages = 0;
  const started = performance.now();
  const deadline = started + SECONDS * 1000;
  await Promise.all(
    Array.from({ length: workers }, async () => {
      while (performance.now() < deadline) {
        const at = performance.now();
        const done = await step();
        latencies.push(performance.now() - at);
        if (done === 0) break;
        messages += done;
      }
    }),
  );
  const seconds = (performance.now() - started) / 1000;
  const serverAfter = side.serverCpu();
  const storeAfter = await side.storeCpu();
  const result: Measure = { messages, seconds, latencies };
  if (serverBefore !== undefined && serverAfter !== undefined) result.serverCpu = serverAfter - serverBefore;
  if (storeBefore !== undefined && storeAfter !== undefined) result.storeCpu = storeAfter - storeBefore;
  const memory = side.memory();
  if (memory) result.rss = memory.rss;
  return result;
}

const items = (queue: string, count: number, start: number) =>
  Array.from({ length: count }, (_, index) => ({
    queue,
    partition: `p${(start + index) % PARTITIONS}`,
    payload: PAYLOAD,
  }));

async function pushRow(side: Side, batch: number): Promise<Measure> {
  const queue = queueName(`push${batch}`);
  await call(side, 'POST', '/api/v1/configure', { queue, options: {} });
  let sent = 0;
  return measure(side, PRODUCERS, async () => {
    const start = sent;
    sent += batch;
    await call(side, 'POST', '/api/v1/push', { items: items(queue, batch, start) });
    return batch;
  });
}

async function popAckRow(side: Side): Promise<Measure> {
  const queue = queueName('popack');
  await call(side, 'POST', '/api/v1/configure', { queue, options: {} });
  // Filled beforehand, more than the fastest side consumes in the row.
  const fill = Number(process.env.BENCH_POPACK_FILL ?? 400_000);
  let filled = 0;
  await Promise.all(
    Array.from({ length: PRODUCERS }, async () => {
      while (filled < fill) {
        const start = filled;
        filled += 500;
        await call(side, 'POST', '/api/v1/push', { items: items(queue, 500, start) });
      }
    }),
  );
  return measure(side, CONSUMERS, async () => {
    const popped = await call(
      side,
      'GET',
      `/api/v1/pop/queue/${encodeURIComponent(queue)}?batch=100&wait=false`,
    );
    const messages: { transactionId: string; partitionId: string; leaseId?: string }[] =
      popped.status === 204 ? [] : (popped.json?.messages ?? []);
    if (messages.length === 0) return 0;
    await call(side, 'POST', '/api/v1/ack/batch', {
      acknowledgments: messages.map((message) => ({
        transactionId: message.transactionId,
        partitionId: message.partitionId,
        ...(message.leaseId ? { leaseId: message.leaseId } : {}),
        status: 'completed',
      })),
    });
    return messages.length;
  });
}

const ROWS: { name: string; run: (side: Side) => Promise<Measure> }[] = [
  { name: 'push b1, 16 concurrent', run: (side) => pushRow(side, 1) },
  { name: 'push b100, 16 concurrent', run: (side) => pushRow(side, 100) },
  { name: 'pop b100 + ack, 10 concurrent', run: popAckRow },
];

// ---- report -------------------------------------------------------------------------------------
const percentile = (values: number[], p: number) => {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))] ?? 0;
};
const rate = (m: Measure) => m.messages / m.seconds;
const perMessage = (cpu: number | undefined, m: Measure) =>
  cpu === undefined || m.messages === 0 ? '' : ((cpu / m.messages) * 1e6).toFixed(1);
const mb = (kb: number | undefined) => (kb === undefined ? '' : (kb / 1024).toFixed(0));
const ratio = (a: number, b: number) => (b > 0 ? `${(a / b).toFixed(2)}×` : '');

const load = () =>
  loadavg()
    .map((value) => value.toFixed(2))
    .join(' ');
console.log(
  `peer.bench: ${SECONDS} s per row, ${PARTITIONS} partitions; Herald on Redis ${redisServer.port} (appendfsync ${APPENDFSYNC}), ` +
    `node ${process.version} ${brokerFlags.join(' ')}; peer ${PEER_URL}; load average ${load()}`,
);
console.log(
  '| run | row | side | msg/s | p50 ms | p99 ms | server µs CPU/msg | store µs CPU/msg | server RSS MB | Herald/peer msg/s |',
);
console.log('|---|---|---|---|---|---|---|---|---|---|');
for (const run of [1, 2]) {
  for (const row of ROWS) {
    // Alternating: the first run starts each row with Herald, the second with the peer.
    const order = run === 1 ? [herald, peer] : [peer, herald];
    const results = new Map<Side, Measure>();
    for (const side of order) results.set(side, await row.run(side));
    const ours = results.get(herald) as Measure;
    const theirs = results.get(peer) as Measure;
    for (const side of [herald, peer]) {
      const m = results.get(side) as Measure;
      console.log(
        `| ${run} | ${row.name} | ${side.name} | ${rate(m).toFixed(0)} | ${percentile(m.latencies, 50).toFixed(1)} | ` +
          `${percentile(m.latencies, 99).toFixed(1)} | ${perMessage(m.serverCpu, m)} | ${perMessage(m.storeCpu, m)} | ` +
          `${mb(m.rss)} | ${side === herald ? ratio(rate(ours), rate(theirs)) : ''} |`,
      );
    }
  }
}
const ourMemory = herald.memory();
const theirMemory = peer.memory();
console.log(
  `peak RSS (VmHWM): Herald ${mb(ourMemory?.hwm)} MB, peer ${mb(theirMemory?.hwm)} MB` +
    (ourMemory && theirMemory ? ` (${ratio(ourMemory.hwm, theirMemory.hwm)})` : '') +
    `; load average at the end ${load()}`,
);

await herald.pool.close();
await peer.pool.close();
redis.disconnect();
child.kill('SIGTERM');
await new Promise((resolve) => child.once('exit', resolve));
await redisServer.destroy();

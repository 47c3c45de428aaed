/**
 * Hub benchmark: a script, not a test (STYLE: fixed workload, ratios against a baseline measured
 * in the same run). Run after `npm run build`:
 *
 *   node --import tsx test/bench/hub.bench.ts
 *
 * (a) fan-out deliveries/s, N subscribers over 2 hub nodes vs a minimal node:http SSE server
 *     (2 processes) fed by raw Redis pub/sub;
 * (b) publishes/s on one node (HS256 JWT + Lua) vs a fastify POST handler doing nothing;
 * (b') CPU time per publish of that node vs per request of the no-op server (/proc/<pid>/stat),
 *      which the two shared cores' load does not skew the way it skews the rates;
 * (c) RSS per idle subscriber, BENCH_IDLE_SUBSCRIBERS of them on ONE fresh hub node vs one fresh
 *     minimal SSE server process, with the hub node's RSS and V8 heap;
 * (d) publish -> deliver latency p50/p99 across nodes at a fixed rate.
 *
 * Scaled for a 2-core machine with < 20k open files per process: subscribers are held by
 * client processes of their own; sizes are the constants below (BENCH_SUBSCRIBERS etc. override).
 * (c) holds 19,000 idle subscribers on one node by default: the hard open-file limit here is
 * 20,000 (`ulimit -Hn`) and cannot be raised, even as root, so a single process cannot hold 20,000
 * sockets plus its own files; where the hard limit allows, BENCH_IDLE_SUBSCRIBERS=20000 works, and
 * every process of the bench raises its soft limit to the hard limit.
 * Everything binds 127.0.0.1 and every phase is bounded in time and count.
 * Over 500 lines on purpose: four measurements with their baselines in one run, so the ratios
 * compare numbers taken under the same load.
 */
import { type ChildProcess, fork } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { createServer, type ServerResponse } from 'node:http';
import { connect } from 'node:net';
import { setTimeout as sleep } from 'node:timers/promises';
import { fileURLToPath } from 'node:url';
import { createMetrics } from '@herald/metrics';
import { freePort, RedisServer, uniquePrefix, waitFor } from '@herald/testkit';
import { Redis } from 'ioredis';
import { Pool } from 'undici';
import { generateUpdateId } from '../../services/hub/src/publish.js';
import { RedisTransport } from '../../services/hub/src/transport-redis.js';
import { type HubProcess, publisherToken, spawnHub } from '../hub/support.js';

const SELF = fileURLToPath(import.meta.url);
const SUBSCRIBERS = Number(process.env.BENCH_SUBSCRIBERS ?? 4000);
const CLIENT_PROCESSES = 2;
const FANOUT_UPDATES = Number(process.env.BENCH_FANOUT_UPDATES ?? 200);
const IDLE_SUBSCRIBERS = Number(process.env.BENCH_IDLE_SUBSCRIBERS ?? 19_000);
/** Client processes for (c): each stays far below the per-process open-file limit. */
const IDLE_CLIENT_PROCESSES = 2;
/** Requests before the measured window: enough for V8 to optimise both servers' hot paths. */
const PUBLISH_WARMUP_REQUESTS = 5000;
const PUBLISH_SECONDS = 3;
const PUBLISH_CONCURRENCY = 32;
const LATENCY_RATE = Number(process.env.BENCH_LATENCY_RATE ?? 10);
const LATENCY_SECONDS = 5;
const TOPIC = 'https://example.com/bench';
const BENCH_LOG_LEVEL = 'warn';

// ---------------------------------------------------------------------------------------------
// Child roles: baseline SSE server, no-op fastify server, subscriber client.

async function runBaselineSse(port: number, redisUrl: string, channel: string): Promise<void> {
  const clients = new Set<ServerResponse>();
  const server = createServer((request, response) => {
    if (request.method !== 'GET') {
      response.writeHead(404).end();
      return;
    }
    response.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-store' });
    response.write(':\n\n');
    clients.add(response);
    response.on('close', () => clients.delete(response));
  });
  server.keepAliveTimeout = 0;
  const redis = new Redis(redisUrl);
  await redis.subscribe(channel);
  redis.on('message', (_channel: string, message: string) => {
    const newline = message.indexOf('\n');
    const frame = Buffer.from(`id: ${message.slice(0, newline)}\ndata: ${message.slice(newline + 1)}\n\n`);
    for (const client of clients) client.write(frame);
  });
  server.listen(port, '127.0.0.1', () => process.send?.('ready'));
}

async function runNoopFastify(port: number): Promise<void> {
  const { default: Fastify } = await import('fastify');
  // Configured like the hub's server kit: pino at the same level (both run at LOG_LEVEL=warn, so
  // neither logs per request but both pay for the per-request child logger).
  const app = Fastify({ logger: { level: BENCH_LOG_LEVEL, base: { service: 'noop' } } });
  app.addContentTypeParser('application/x-www-form-urlencoded', { parseAs: 'string' }, (_r, body, done) =>
    done(null, body),
  );
  app.post('/.well-known/mercure', async () => 'ok');
  await app.listen({ port, host: '127.0.0.1' });
  process.send?.('ready');
}

interface ClientJob {
  ports: number[];
  path: string;
  count: number;
}

/** Holds `count` raw SSE connections spread over `ports`; counts events; samples latencies. */
async function runClient(): Promise<void> {
  let sockets: import('node:net').Socket[] = [];
  let events = 0;
  let latencies: number[] = [];
  const onMessage = async (message: { type: string; job?: ClientJob }) => {
    if (message.type === 'open' && message.job) {
      const { ports, path, count } = message.job;
      const opened: Promise<void>[] = [];
      for (let index = 0; index < count; index++) {
        const socket = connect(ports[index % ports.length] as number, '127.0.0.1');
        socket.setNoDelay(true);
        const sample = index % 20 === 0;
        let carry = '';
        let headersDone = false;
        opened.push(
          new Promise((resolve, reject) => {
            socket.once('error', reject);
            socket.on('data', (chunk: Buffer) => {
              const text = carry + chunk.toString('latin1');
              if (!headersDone) {
                if (!text.includes('\r\n\r\n')) {
                  carry = text;
                  return;
                }
                headersDone = true;
                resolve();
              }
              let position = text.indexOf('\ndata: ');
              while (position !== -1) {
                const end = text.indexOf('\n', position + 7);
                if (end === -1) break;
                events += 1;
                if (sample) {
                  const sentAt = Number(text.slice(position + 7, end));
                  if (sentAt > 0) latencies.push(performance.timeOrigin + performance.now() - sentAt);
                }
                position = text.indexOf('\ndata: ', end);
              }
              carry = position === -1 ? text.slice(-8) : text.slice(position);
            });
          }),
        );
        socket.write(`GET ${path} HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Forwarded-Proto: https\r\n\r\n`);
        sockets.push(socket);
        if (opened.length % 200 === 0) await Promise.all(opened.slice(-200));
      }
      await Promise.all(opened);
      process.send?.({ type: 'opened' });
    } else if (message.type === 'count') {
      process.send?.({ type: 'count', events });
    } else if (message.type === 'latencies') {
      process.send?.({ type: 'latencies', latencies });
      latencies = [];
    } else if (message.type === 'reset') {
      events = 0;
      latencies = [];
      process.send?.({ type: 'reset' });
    } else if (message.type === 'close') {
      for (const socket of sockets) socket.destroy();
      sockets = [];
      process.send?.({ type: 'closed' });
    }
  };
  process.on('message', (message) => void onMessage(message as { type: string; job?: ClientJob }));
  process.send?.({ type: 'ready' });
}

// ---------------------------------------------------------------------------------------------
// Orchestration helpers.

function request(child: ChildProcess, message: object, replyType: string): Promise<Record<string, unknown>> {
  return new Promise((resolve) => {
    const listener = (reply: Record<string, unknown>) => {
      if (reply.type !== replyType) return;
      child.off('message', listener);
      resolve(reply);
    };
    child.on('message', listener);
    child.send(message);
  });
}

/**
 * Children run through `bash -c 'ulimit -n <hard> && exec node …'`: the soft open-file limit is
 * raised to the hard one (node does not raise it itself), so (c) is bounded by the machine's limit.
 */
const RAISE_OPEN_FILES = 'ulimit -n "$(ulimit -Hn)" && exec "$0" "$@"';

async function forkRole(args: string[]): Promise<ChildProcess> {
  const child = fork(SELF, args, {
    execPath: 'bash',
    execArgv: ['-c', RAISE_OPEN_FILES, process.execPath, '--import', 'tsx'],
    stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
  });
  await new Promise<void>((resolve) => {
    const listener = (message: unknown) => {
      if (message === 'ready' || (message as { type?: string })?.type === 'ready') {
        child.off('message', listener);
        resolve();
      }
    };
    child.on('message', listener);
  });
  return child;
}

/** User plus system CPU time of a process so far, in microseconds (/proc/<pid>/stat, in ticks). */
function cpuMicroseconds(pid: number): number {
  const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]?.split(' ') ?? [];
  const ticks = Number(fields[11]) + Number(fields[12]);
  return (ticks * 1_000_000) / CLOCK_TICKS;
}
const CLOCK_TICKS = 100;

/** The V8 heap in use of a hub node, from its own /metrics (prom-client's default metrics). */
async function hubHeapUsedBytes(origin: string): Promise<number> {
  const response = await fetch(`${origin}/metrics`);
  const match = /^nodejs_heap_size_used_bytes(?:\{[^}]*\})? (\d+)/m.exec(await response.text());
  return Number(match?.[1] ?? Number.NaN);
}

/** RSS once it settles: the last of a few samples a second apart (garbage is collected meanwhile). */
async function settledRssBytes(pid: number): Promise<number> {
  let rss = 0;
  for (let sample = 0; sample < 3; sample++) {
    await sleep(1000);
    rss = rssBytes(pid);
  }
  return rss;
}

function rssBytes(pid: number): number {
  const status = readFileSync(`/proc/${pid}/status`, 'utf8');
  const match = /VmRSS:\s+(\d+) kB/.exec(status);
  return Number(match?.[1] ?? 0) * 1024;
}

async function totalEvents(clients: ChildProcess[]): Promise<number> {
  const replies = await Promise.all(clients.map((client) => request(client, { type: 'count' }, 'count')));
  return replies.reduce((sum, reply) => sum + Number(reply.events), 0);
}

/** Write syscalls (write, writev) a process made so far: /proc/<pid>/io `syscw`. */
function writeSyscalls(pid: number): number {
  const match = /syscw:\s+(\d+)/.exec(readFileSync(`/proc/${pid}/io`, 'utf8'));
  return Number(match?.[1] ?? 0);
}

function percentile(sorted: number[], fraction: number): number {
  if (sorted.length === 0) return Number.NaN;
  return sorted[Math.min(sorted.length - 1, Math.floor(fraction * sorted.length))] as number;
}

interface Target {
  name: string;
  ports: number[];
  path: string;
  pids: number[];
  publish: (data: string) => Promise<void>;
}

async function openSubscribers(clients: ChildProcess[], target: Target, total: number): Promise<void> {
  const perClient = Math.ceil(total / clients.length);
  await Promise.all(
    clients.map((client) =>
      request(
        client,
        { type: 'open', job: { ports: target.ports, path: target.path, count: perClient } },
        'opened',
      ),
    ),
  );
}

/**
 * Deliveries per second, and write syscalls per delivery on the server side (how well the server
 * coalesces events: one syscall per event per subscriber is the worst case).
 */
async function measureFanout(
  clients: ChildProcess[],
  target: Target,
  subscribers: number,
): Promise<{ rate: number; writesPerDelivery: number }> {
  await Promise.all(clients.map((client) => request(client, { type: 'reset' }, 'reset')));
  const expected = subscribers * FANOUT_UPDATES;
  const writesBefore = target.pids.reduce((sum, pid) => sum + writeSyscalls(pid), 0);
  const started = performance.now();
  const inFlight = new Set<Promise<void>>();
  for (let index = 0; index < FANOUT_UPDATES; index++) {
    const sent = target.publish('0').finally(() => inFlight.delete(sent));
    inFlight.add(sent);
    if (inFlight.size >= 16) await Promise.race(inFlight);
  }
  await Promise.all(inFlight);
  await waitFor(async () => (await totalEvents(clients)) >= expected, {
    timeoutMs: 120_000,
    intervalMs: 20,
    what: 'fan-out',
  });
  const rate = expected / ((performance.now() - started) / 1000);
  const writes = target.pids.reduce((sum, pid) => sum + writeSyscalls(pid), 0) - writesBefore;
  return { rate, writesPerDelivery: writes / expected };
}

async function measureLatency(
  clients: ChildProcess[],
  target: Target,
): Promise<{ p50: number; p99: number; samples: number }> {
  await Promise.all(clients.map((client) => request(client, { type: 'reset' }, 'reset')));
  const interval = 1000 / LATENCY_RATE;
  const started = performance.now();
  const total = LATENCY_RATE * LATENCY_SECONDS;
  const pending: Promise<void>[] = [];
  for (let index = 0; index < total; index++) {
    const due = started + index * interval;
    const wait = due - performance.now();
    if (wait > 1) await sleep(wait);
    pending.push(target.publish(String(performance.timeOrigin + performance.now())));
  }
  await Promise.all(pending);
  await sleep(500);
  const replies = await Promise.all(
    clients.map((client) => request(client, { type: 'latencies' }, 'latencies')),
  );
  const all = replies.flatMap((reply) => reply.latencies as number[]).sort((a, b) => a - b);
  return { p50: percentile(all, 0.5), p99: percentile(all, 0.99), samples: all.length };
}

/**
 * Requests per second and the server's CPU microseconds per request, after a warm-up of the same
 * load (both servers get their hot paths compiled before the measured window).
 */
async function measurePublishRate(
  url: string,
  headers: Record<string, string>,
  pid: number,
): Promise<{ rate: number; cpuPerRequest: number }> {
  const { origin, pathname } = new URL(url);
  const pool = new Pool(origin, { connections: PUBLISH_CONCURRENCY, pipelining: 1 });
  const body = new URLSearchParams({ topic: 'https://example.com/rate', data: 'x' }).toString();
  let done = 0;
  let limit = PUBLISH_WARMUP_REQUESTS;
  let deadline = Number.POSITIVE_INFINITY;
  const worker = async () => {
    while (performance.now() < deadline && done < limit) {
      const response = await pool.request({
        path: pathname,
        method: 'POST',
        headers: {
          'content-type': 'application/x-www-form-urlencoded',
          'x-forwarded-proto': 'https',
          ...headers,
        },
        body,
      });
      await response.body.dump();
      if (response.statusCode !== 200) throw new Error(`publish answered ${response.statusCode}`);
      done += 1;
    }
  };
  await Promise.all(Array.from({ length: PUBLISH_CONCURRENCY }, worker));
  done = 0;
  limit = Number.POSITIVE_INFINITY;
  deadline = performance.now() + PUBLISH_SECONDS * 1000;
  const cpuBefore = cpuMicroseconds(pid);
  const started = performance.now();
  await Promise.all(Array.from({ length: PUBLISH_CONCURRENCY }, worker));
  const elapsed = (performance.now() - started) / 1000;
  const cpuPerRequest = (cpuMicroseconds(pid) - cpuBefore) / done;
  await pool.close();
  return { rate: done / elapsed, cpuPerRequest };
}

interface IdleFigures {
  rssPerSubscriber: number;
  rssBytes: number;
  heapUsedBytes?: number;
}

/**
 * (c): `IDLE_SUBSCRIBERS` idle streams on one server process, RSS (and for the hub the V8 heap)
 * before and after, settled. Fresh client processes, closed afterwards.
 */
async function measureIdle(pid: number, port: number, path: string, origin?: string): Promise<IdleFigures> {
  const clients = await Promise.all(
    Array.from({ length: IDLE_CLIENT_PROCESSES }, () => forkRole(['--client'])),
  );
  try {
    const rssBefore = await settledRssBytes(pid);
    await openSubscribers(
      clients,
      { name: 'idle', ports: [port], path, pids: [pid], publish: async () => {} },
      IDLE_SUBSCRIBERS,
    );
    const rssAfter = await settledRssBytes(pid);
    const heapUsedBytes = origin === undefined ? undefined : await hubHeapUsedBytes(origin);
    return {
      rssPerSubscriber: (rssAfter - rssBefore) / IDLE_SUBSCRIBERS,
      rssBytes: rssAfter,
      ...(heapUsedBytes === undefined ? {} : { heapUsedBytes }),
    };
  } finally {
    for (const client of clients) client.kill('SIGKILL');
  }
}

// ---------------------------------------------------------------------------------------------

async function main(): Promise<void> {
  const redis = await RedisServer.start();
  const children: ChildProcess[] = [];
  const hubs: HubProcess[] = [];
  try {
    const environment = {
      REDIS_URL: redis.url,
      MERCURE_REDIS_PREFIX: uniquePrefix('bench'),
      MERCURE_ANONYMOUS: '1',
      MERCURE_HEARTBEAT: '0',
      MERCURE_WRITE_TIMEOUT: '0',
      LOG_LEVEL: BENCH_LOG_LEVEL,
    };
    // BENCH_HUB_PROFILE=<dir>: each hub node writes a V8 CPU profile there when it exits.
    const profileDirectory = process.env.BENCH_HUB_PROFILE;
    const hubOptions = profileDirectory
      ? { nodeArguments: ['--cpu-prof', `--cpu-prof-dir=${profileDirectory}`] }
      : {};
    hubs.push(...(await Promise.all([spawnHub(environment, hubOptions), spawnHub(environment, hubOptions)])));
    const token = publisherToken();
    const hubPool = new Pool(hubs[0]?.origin as string, { connections: 16 });
    const hubPoolB = new Pool(hubs[1]?.origin as string, { connections: 16 });
    let turn = 0;
    const hubTarget: Target = {
      name: 'hub',
      ports: hubs.map((hub) => hub.port),
      path: `/.well-known/mercure?match=${encodeURIComponent(TOPIC)}`,
      pids: hubs.map((hub) => hub.child.pid as number),
      publish: async (data) => {
        turn += 1;
        const response = await (turn % 2 === 0 ? hubPool : hubPoolB).request({
          path: '/.well-known/mercure',
          method: 'POST',
          headers: {
            'content-type': 'application/x-www-form-urlencoded',
            authorization: `Bearer ${token}`,
            'x-forwarded-proto': 'https',
          },
          body: new URLSearchParams({ topic: TOPIC, data }).toString(),
        });
        await response.body.dump();
      },
    };

    // (a) feeds both servers the same way, straight into Redis, so it measures fan-out only: the
    // baseline gets raw PUBLISHes, the hub its real publish script (XADD + PUBLISH) run by the
    // bench. Through HTTP the hub nodes would also verify JWTs for the 200 publishes on the same
    // cores while fanning out, which (b) measures; that end-to-end figure is reported too.
    const metrics = createMetrics();
    const feeder = new RedisTransport({
      url: redis.url,
      prefix: environment.MERCURE_REDIS_PREFIX,
      historySize: 10_000,
      historyTtl: 0,
      metrics,
      subscriptions: false,
      subscriptionsLease: 15_000,
    });
    // Not started (it only publishes): ready once its command connection is.
    await waitFor(async () => !(await feeder.readiness())?.startsWith('Redis connection'), {
      what: 'the feeder connection',
    });
    const hubFedByRedis: Target = {
      ...hubTarget,
      name: 'hub fed by Redis',
      publish: async (data) => {
        await feeder.publish({
          id: generateUpdateId(),
          topics: [TOPIC],
          data,
          private: false,
        });
      },
    };

    const channel = 'bench-baseline';
    const baselinePorts = [await freePort(), await freePort()];
    const baselines = await Promise.all(
      baselinePorts.map((port) => forkRole(['--baseline-sse', String(port), redis.url, channel])),
    );
    children.push(...baselines);
    const publisherRedis = new Redis(redis.url);
    let sequence = 0;
    const baselineTarget: Target = {
      name: 'baseline',
      ports: baselinePorts,
      path: '/',
      pids: baselines.map((child) => child.pid as number),
      publish: async (data) => {
        sequence += 1;
        await publisherRedis.publish(channel, `${sequence}\n${data}`);
      },
    };

    const clients = await Promise.all(Array.from({ length: CLIENT_PROCESSES }, () => forkRole(['--client'])));
    children.push(...clients);

    const results: Record<string, Record<string, number>> = {};
    for (const target of [baselineTarget, hubTarget]) {
      await openSubscribers(clients, target, SUBSCRIBERS);
      await sleep(1500);
      const fanout = await measureFanout(clients, target === hubTarget ? hubFedByRedis : target, SUBSCRIBERS);
      const fanoutEndToEnd =
        target === hubTarget ? await measureFanout(clients, target, SUBSCRIBERS) : fanout;
      const latency = await measureLatency(clients, target);
      await Promise.all(clients.map((client) => request(client, { type: 'close' }, 'closed')));
      results[target.name] = {
        fanout: fanout.rate,
        fanoutEndToEnd: fanoutEndToEnd.rate,
        writesPerDelivery: fanout.writesPerDelivery,
        p50: latency.p50,
        p99: latency.p99,
        samples: latency.samples,
      };
    }

    for (const client of clients) client.kill('SIGKILL');
    const noopPort = await freePort();
    const noop = await forkRole(['--noop-fastify', String(noopPort)]);
    children.push(noop);
    const noopPublish = await measurePublishRate(
      `http://127.0.0.1:${noopPort}/.well-known/mercure`,
      {},
      noop.pid as number,
    );
    const hubPublish = await measurePublishRate(
      hubs[0]?.url as string,
      { authorization: `Bearer ${token}` },
      hubs[0]?.child.pid as number,
    );
    noop.kill('SIGKILL');

    // (c) on fresh processes, so neither carries the garbage or caches of the phases above.
    const idleBaselinePort = await freePort();
    const idleBaseline = await forkRole(['--baseline-sse', String(idleBaselinePort), redis.url, channel]);
    children.push(idleBaseline);
    const baselineIdle = await measureIdle(idleBaseline.pid as number, idleBaselinePort, '/');
    idleBaseline.kill('SIGKILL');
    const idleHub = await spawnHub(environment);
    hubs.push(idleHub);
    const hubOpenFiles = /Max open files\s+(\d+)/.exec(
      readFileSync(`/proc/${idleHub.child.pid}/limits`, 'utf8'),
    )?.[1];
    const hubIdle = await measureIdle(
      idleHub.child.pid as number,
      idleHub.port,
      hubTarget.path,
      idleHub.origin,
    );

    const hub = results.hub as Record<string, number>;
    const base = results.baseline as Record<string, number>;
    const rows: [string, string, string, string, string][] = [
      [
        `(a) fan-out deliveries/s (${SUBSCRIBERS} subs / 2 nodes, ${FANOUT_UPDATES} updates)`,
        hub.fanout?.toFixed(0) ?? '',
        base.fanout?.toFixed(0) ?? '',
        ((hub.fanout ?? 0) / (base.fanout ?? 1)).toFixed(2),
        '>= 0.80',
      ],
      [
        `(b) publishes/s, one node (HS256 JWT + Lua), ${PUBLISH_CONCURRENCY} conns`,
        hubPublish.rate.toFixed(0),
        `${noopPublish.rate.toFixed(0)} (fastify no-op)`,
        (hubPublish.rate / noopPublish.rate).toFixed(2),
        '>= 0.60',
      ],
      [
        '    (b) server CPU us per request (user + system)',
        hubPublish.cpuPerRequest.toFixed(0),
        noopPublish.cpuPerRequest.toFixed(0),
        (noopPublish.cpuPerRequest / hubPublish.cpuPerRequest).toFixed(2),
        '(no-op / hub)',
      ],
      [
        '    (a) hub fed by HTTP POSTs on the same nodes (end to end)',
        hub.fanoutEndToEnd?.toFixed(0) ?? '',
        base.fanout?.toFixed(0) ?? '',
        ((hub.fanoutEndToEnd ?? 0) / (base.fanout ?? 1)).toFixed(2),
        '',
      ],
      [
        '    (a) server write syscalls per delivery',
        hub.writesPerDelivery?.toFixed(3) ?? '',
        base.writesPerDelivery?.toFixed(3) ?? '',
        ((hub.writesPerDelivery ?? 0) / (base.writesPerDelivery ?? 1)).toFixed(2),
        '',
      ],
      [
        `(c) RSS bytes per idle subscriber (${IDLE_SUBSCRIBERS} on one process)`,
        hubIdle.rssPerSubscriber.toFixed(0),
        `${baselineIdle.rssPerSubscriber.toFixed(0)} (node:http SSE)`,
        (hubIdle.rssPerSubscriber / baselineIdle.rssPerSubscriber).toFixed(2),
        '<= 1.20',
      ],
      [
        `(c) one node holding ${IDLE_SUBSCRIBERS} idle subscribers: RSS MB`,
        (hubIdle.rssBytes / 2 ** 20).toFixed(0),
        (baselineIdle.rssBytes / 2 ** 20).toFixed(0),
        (hubIdle.rssBytes / baselineIdle.rssBytes).toFixed(2),
        `>= 20,000 subs (open files ${hubOpenFiles})`,
      ],
      [
        '    (c) V8 heap used by that hub node, MB',
        ((hubIdle.heapUsedBytes ?? Number.NaN) / 2 ** 20).toFixed(0),
        '',
        '',
        '',
      ],
      [
        `(d) latency p50 ms (${LATENCY_RATE}/s, ${SUBSCRIBERS} subs, cross-node)`,
        hub.p50?.toFixed(2) ?? '',
        base.p50?.toFixed(2) ?? '',
        ((hub.p50 ?? 0) / (base.p50 ?? 1)).toFixed(2),
        '',
      ],
      [
        `(d) latency p99 ms (${hub.samples} samples)`,
        hub.p99?.toFixed(2) ?? '',
        base.p99?.toFixed(2) ?? '',
        ((hub.p99 ?? 0) / (base.p99 ?? 1)).toFixed(2),
        'p99 < 10 ms',
      ],
    ];
    const header: [string, string, string, string, string] = ['metric', 'hub', 'baseline', 'ratio', 'target'];
    const widths = header.map((cell, column) =>
      Math.max(cell.length, ...rows.map((row) => row[column]?.length ?? 0)),
    );
    const line = (row: string[]) =>
      `| ${row.map((cell, column) => cell.padEnd(widths[column] ?? 0)).join(' | ')} |`;
    process.stdout.write(`${line(header)}\n|${widths.map((width) => '-'.repeat(width + 2)).join('|')}|\n`);
    for (const row of rows) process.stdout.write(`${line(row)}\n`);
    await hubPool.close();
    await hubPoolB.close();
    publisherRedis.disconnect();
    await feeder.stop();
  } finally {
    for (const child of children) child.kill('SIGKILL');
    await Promise.all(hubs.map((hub) => hub.stop()));
    await redis.destroy();
  }
}

const [role, ...rest] = process.argv.slice(2);
if (role === '--baseline-sse') await runBaselineSse(Number(rest[0]), rest[1] as string, rest[2] as string);
else if (role === '--noop-fastify') await runNoopFastify(Number(rest[0]));
else if (role === '--client') await runClient();
else {
  await main();
  process.exit(0);
}

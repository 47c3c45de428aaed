/*
 * Hub scale (issue #26): holds many idle subscribers on hub nodes, then publishes to a sample of
 * them; prints the time to accept them all, the node's RSS per subscriber, and delivery p50/p99 to
 * the sample, against a minimal node:http SSE server holding as many (the baseline, same run).
 * A script run by hand, not part of `npm test`:
 *
 *   HUB_SCALE_SUBSCRIBERS=100000 node --import tsx test/bench/hub-scale.bench.ts
 *   HUB_SCALE_SUBSCRIBERS=100000 HUB_SCALE_NODES=2 node --import tsx test/bench/hub-scale.bench.ts
 *
 * - One node: the in-process backend. Two nodes: on a private redis-server, the subscribers
 *   split evenly (50,000 each for 100,000).
 * - Subscribers are held by client processes of HUB_SCALE_PER_CLIENT each (default 15,000),
 *   each connecting from its own loopback source address (127.0.0.2, 127.0.0.3, …: one source
 *   address has ~28,000 ephemeral ports toward one port).
 * - Every process raises its soft open-file limit to the hard one. A node must hold its
 *   subscribers plus its own files: when the hard limit (`ulimit -Hn`) is lower, the run is
 *   capped per node and the script says so in its first line (this 2-core machine: 20,000, which
 *   even root cannot raise here, so it holds 19,000 per node).
 * - HUB_SCALE_SAMPLE (default 1,000) subscribers subscribe to a topic of their own; after all
 *   are connected and the node settled, HUB_SCALE_UPDATES updates (default 100, at 20 per second)
 *   go to that topic, each carrying its send time; every sample subscriber reports what it got.
 * - HUB_SCALE_PROTOCOL=h2c: the subscribers are streams of HTTP/2 connections, as behind a proxy
 *   that speaks HTTP/2 to the pods, HUB_SCALE_STREAMS_PER_CONNECTION each (default 1000, the
 *   hub's MERCURE_H2C_MAX_STREAMS): the hubs listen on MERCURE_H2C_PORT, the baseline is the same
 *   minimal server on node:http2's cleartext server. No open-file cap then: a node holds a file
 *   per connection, not per subscriber. Publishes go over HTTP/1.1 either way.
 * - HUB_SCALE_HUB_ARGS: Node flags for the hub nodes, separated by spaces (default none).
 * - RSS per subscriber two ways: from before the first to after the last (÷ all of them), and
 *   the marginal cost, from a third held to all held: the first counts what the node grows
 *   once under load (V8's young generation grows to tens of MB while connections arrive), the
 *   second only what each further subscriber adds. Each read two ways (`settledRss`): settled,
 *   once the node stopped shrinking (up to 45 s), and the least of the first 5 s (the rule of
 *   runs up to "Round 4" in docs/benchmarks.md, printed to compare with them).
 * Run it on a quiet machine (no test suite or helper): the load average is printed.
 */
import { type ChildProcess, fork } from 'node:child_process';
import { once } from 'node:events';
import { readFileSync } from 'node:fs';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import {
  type ClientHttp2Session,
  connect as connectHttp2,
  createServer as createHttp2Server,
} from 'node:http2';
import { connect } from 'node:net';
import { loadavg } from 'node:os';
import { setTimeout as sleep } from 'node:timers/promises';
import { fileURLToPath } from 'node:url';
import { freePort, RedisServer, uniquePrefix } from '@herald/testkit';
import { type HubProcess, publisherToken, spawnHub } from '../hub/support.js';

const SELF = fileURLToPath(import.meta.url);
const SUBSCRIBERS = Number(process.env.HUB_SCALE_SUBSCRIBERS ?? 100_000);
const NODES = Number(process.env.HUB_SCALE_NODES ?? 1);
const PER_CLIENT = Number(process.env.HUB_SCALE_PER_CLIENT ?? 15_000);
const SAMPLE = Number(process.env.HUB_SCALE_SAMPLE ?? 1000);
const UPDATES = Number(process.env.HUB_SCALE_UPDATES ?? 100);
const H2C = process.env.HUB_SCALE_PROTOCOL === 'h2c';
const STREAMS_PER_CONNECTION = Number(process.env.HUB_SCALE_STREAMS_PER_CONNECTION ?? 1000);
const HUB_ARGS = (process.env.HUB_SCALE_HUB_ARGS ?? '').split(' ').filter((flag) => flag !== '');
const UPDATES_PER_SECOND = 20;
/** Files a node needs besides its subscribers (listening socket, Redis, libraries, stdio). */
const NODE_FILES = 1000;
const SAMPLE_TOPIC = 'https://example.com/scale/sample';
const IDLE_TOPICS = 100;
const RAISE_OPEN_FILES = 'ulimit -n "$(ulimit -Hn)" && exec "$0" "$@"';

interface Job {
  /** The port subscribers connect to (the h2c one with HUB_SCALE_PROTOCOL=h2c). */
  port: number;
  samplePath: string;
  count: number;
  samples: number;
  sourceAddress: string;
}

// ---- child roles -------------------------------------------------------------------------------

/**
 * The baseline: a minimal node:http SSE server (headers, an opening comment, raw frames); with
 * `h2cPort`, the same handler also on node:http2's cleartext server there, as the hub's h2c port.
 */
function runBaseline(port: number, h2cPort: number | undefined): void {
  const clients = new Map<ServerResponse, boolean>();
  const handler = (request: IncomingMessage, response: ServerResponse) => {
    if (request.method === 'POST') {
      let body = '';
      request.on('data', (chunk: Buffer) => {
        body += chunk;
      });
      request.on('end', () => {
        const frame = Buffer.from(`data: ${body}\n\n`);
        for (const [client, sample] of clients) if (sample) client.write(frame);
        response.end('ok');
      });
      return;
    }
    response.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-store' });
    response.write(':\n\n');
    clients.set(response, request.url?.includes('sample') ?? false);
    response.on('close', () => clients.delete(response));
  };
  let listening = h2cPort === undefined ? 1 : 2;
  const ready = () => {
    listening -= 1;
    if (listening === 0) process.send?.({ type: 'ready' });
  };
  createServer(handler).listen(port, '127.0.0.1', ready).keepAliveTimeout = 0;
  if (h2cPort !== undefined) {
    createHttp2Server(
      { settings: { maxConcurrentStreams: STREAMS_PER_CONNECTION } },
      handler as unknown as Parameters<typeof createHttp2Server>[1],
    ).listen(h2cPort, '127.0.0.1', ready);
  }
}

/**
 * Notes the delay of every event in a stream's body (its data: the send time); fed the body's
 * chunks in order, as latin1 text. A chunk may end anywhere, "dat" included (an HTTP/2 DATA frame
 * cut to the connection's flow-control window): a line is read once its line break arrived.
 */
function delayReader(delays: number[]): (text: string) => void {
  let carry = '';
  return (chunk) => {
    const text = carry + chunk;
    let start = 0;
    for (let end = text.indexOf('\n'); end !== -1; end = text.indexOf('\n', start)) {
      if (text.startsWith('data: ', start)) {
        const sentAt = Number(text.slice(start + 6, end));
        if (sentAt > 0) delays.push(performance.timeOrigin + performance.now() - sentAt);
      }
      start = end + 1;
    }
    carry = text.slice(start);
  };
}

/** Opens one raw HTTP/1.1 SSE connection; resolves when its response head arrived. */
function openConnection(
  job: Job,
  path: string,
  read: ((text: string) => void) | undefined,
): {
  opened: Promise<void>;
  close: () => void;
} {
  const socket = connect({ port: job.port, host: '127.0.0.1', localAddress: job.sourceAddress });
  /** The response head while it is incomplete; undefined once it arrived. */
  let head: string | undefined = '';
  const opened = new Promise<void>((resolve, reject) => {
    socket.once('error', reject);
    socket.on('data', (chunk: Buffer) => {
      let text = chunk.toString('latin1');
      if (head !== undefined) {
        text = head + text;
        const end = text.indexOf('\r\n\r\n');
        if (end === -1) {
          head = text;
          return;
        }
        text = text.slice(end + 4);
        head = undefined;
        resolve();
      }
      read?.(text);
    });
  });
  // Behind TRUSTED_PROXIES (127.0.0.1), as a TLS-terminating proxy would pass it on.
  socket.write(`GET ${path} HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Forwarded-Proto: https\r\n\r\n`);
  return { opened, close: () => socket.destroy() };
}

/** Opens one SSE stream on an HTTP/2 connection; resolves when its response headers arrived. */
function openStream(session: ClientHttp2Session, path: string, read: ((text: string) => void) | undefined) {
  const stream = session.request({ ':path': path, 'x-forwarded-proto': 'https' });
  stream.setEncoding('latin1');
  stream.on('data', read ?? (() => undefined));
  const opened = new Promise<void>((resolve, reject) => {
    stream.once('error', reject);
    stream.once('response', () => resolve());
  });
  return { opened, close: () => stream.close() };
}

/** Holds a job's SSE subscribers; the sample ones note each event's delay. */
function runClient(): void {
  let closers: (() => void)[] = [];
  let sessions: ClientHttp2Session[] = [];
  const delays: number[] = [];
  process.on('message', async (message: { type: string; job?: Job }) => {
    if (message.type === 'open' && message.job) {
      const job = message.job;
      const opened: Promise<void>[] = [];
      let session: ClientHttp2Session | undefined;
      let onSession = 0;
      for (let index = 0; index < job.count; index++) {
        const path = index < job.samples ? job.samplePath : idlePath(index);
        const read = index < job.samples ? delayReader(delays) : undefined;
        let subscriber: { opened: Promise<void>; close: () => void };
        if (H2C) {
          if (!session || onSession === STREAMS_PER_CONNECTION) {
            session = connectHttp2(`http://127.0.0.1:${job.port}`, {
              createConnection: () =>
                connect({ port: job.port, host: '127.0.0.1', localAddress: job.sourceAddress }),
            });
            await once(session, 'remoteSettings');
            sessions.push(session);
            onSession = 0;
          }
          onSession += 1;
          subscriber = openStream(session, path, read);
        } else {
          subscriber = openConnection(job, path, read);
        }
        opened.push(subscriber.opened);
        closers.push(subscriber.close);
        if (opened.length % 500 === 0) await Promise.all(opened.slice(-500));
      }
      await Promise.all(opened);
      process.send?.({ type: 'opened' });
    } else if (message.type === 'delays') {
      process.send?.({ type: 'delays', delays });
    } else if (message.type === 'close') {
      for (const close of closers) close();
      for (const each of sessions) each.destroy();
      closers = [];
      sessions = [];
      process.send?.({ type: 'closed' });
    }
  });
  process.send?.({ type: 'ready' });
}

/** Subscriber `index`'s path when idle: one of IDLE_TOPICS topics (the hub's baseline ignores it). */
function idlePath(index: number): string {
  return `/.well-known/mercure?match=${encodeURIComponent(`https://example.com/scale/idle/${index % IDLE_TOPICS}`)}`;
}

// ---- orchestration -----------------------------------------------------------------------------

async function forkRole(args: string[]): Promise<ChildProcess> {
  const child = fork(SELF, args, {
    execPath: 'bash',
    execArgv: ['-c', RAISE_OPEN_FILES, process.execPath, '--import', 'tsx'],
    stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
  });
  await ask(child, undefined, 'ready');
  return child;
}

function ask(
  child: ChildProcess,
  message: object | undefined,
  replyType: string,
): Promise<Record<string, unknown>> {
  return new Promise((resolve, reject) => {
    const listener = (reply: Record<string, unknown>) => {
      if (reply?.type !== replyType) return;
      child.off('message', listener);
      child.off('exit', exited);
      resolve(reply);
    };
    // A child that dies (a client out of source ports: EADDRINUSE) must end the run, not hang it.
    const exited = (code: number | null, signal: NodeJS.Signals | null) => {
      child.off('message', listener);
      reject(new Error(`a child process exited (${code ?? signal}) before answering '${replyType}'`));
    };
    child.on('message', listener);
    child.once('exit', exited);
    if (message) child.send(message);
  });
}

function hardOpenFiles(): number {
  const limits = readFileSync('/proc/self/limits', 'utf8');
  const hard = /Max open files\s+\d+\s+(\d+|unlimited)/.exec(limits)?.[1];
  return hard === undefined || hard === 'unlimited' ? Number.POSITIVE_INFINITY : Number(hard);
}

/** Readings a second apart kept as the quick figure (the script's first rule, kept to compare). */
const QUICK_READINGS = 5;
/** Settled: no new low for this many readings in a row (V8's memory reducer waits ~8 s idle). */
const STABLE_READINGS = 15;
const MAX_READINGS = 45;

/**
 * RSS (bytes) of a process once it settled, two ways: `quick`, the least of the first few readings
 * a second apart; `settled`, the least once no reading has set a new low (by 256 KB) for a while,
 * after V8's memory reducer has had time to collect what accepting left (an idle node's memory,
 * as the broker's floor is measured after 45 s idle: docs/benchmarks.md, "Broker footprint").
 */
async function settledRss(pid: number): Promise<{ quick: number; settled: number }> {
  let least = Number.POSITIVE_INFINITY;
  let quick = least;
  let sinceLow = 0;
  for (let reading = 0; reading < MAX_READINGS && sinceLow < STABLE_READINGS; reading++) {
    await sleep(1000);
    const status = readFileSync(`/proc/${pid}/status`, 'utf8');
    const rss = Number(/VmRSS:\s+(\d+)/.exec(status)?.[1]) * 1024;
    sinceLow = rss < least - 256 * 1024 ? 0 : sinceLow + 1;
    least = Math.min(least, rss);
    if (reading < QUICK_READINGS) quick = least;
  }
  return { quick, settled: least };
}

interface Target {
  name: string;
  /** Each node's port and pid. */
  nodes: { port: number; pid: number }[];
  /** Subscribe paths: the sample's, and the idle ones (built by the client from its index). */
  samplePath: string;
  publish(data: string): Promise<void>;
}

/** RSS figures from one way of reading it (`settledRss`). */
interface RssFigures {
  perSubscriber: number;
  /** RSS added per subscriber from a third held to all held. */
  marginal: number;
  /** Of the node(s) holding them all. */
  mb: number;
}

interface Figures {
  held: number;
  acceptSeconds: number;
  quick: RssFigures;
  settled: RssFigures;
  delivered: number;
  expected: number;
  p50: number;
  p99: number;
}

/**
 * The next loopback source address (127.0.0.<n>). Not reused within a run of the script: a
 * client's closed connections hold its ports in TIME_WAIT for a minute, and a port bound to a
 * source address is taken whatever the destination. (Two invocations within a minute of each
 * other still collide: wait, or the clients fail with EADDRINUSE.)
 */
let nextSource = 2;

async function run(target: Target, perNode: number): Promise<Figures> {
  const clients: ChildProcess[] = [];
  const jobs: { client: ChildProcess; job: Job }[] = [];
  for (const node of target.nodes) {
    const samplesHere = Math.ceil(SAMPLE / target.nodes.length);
    for (let start = 0; start < perNode; start += PER_CLIENT) {
      const count = Math.min(PER_CLIENT, perNode - start);
      const client = await forkRole(['--client']);
      clients.push(client);
      jobs.push({
        client,
        job: {
          port: node.port,
          samplePath: target.samplePath,
          count,
          samples: start === 0 ? Math.min(samplesHere, count) : 0,
          sourceAddress: `127.0.0.${nextSource++}`,
        },
      });
    }
  }
  try {
    const rss = () => Promise.all(target.nodes.map((node) => settledRss(node.pid)));
    /** Each job's connections opened in the first phase: a third of them. */
    const third = (job: Job) => Math.floor(job.count / 3);
    /** Opens each job's first third (`rest` false) or the rest; seconds taken. */
    const open = async (rest: boolean) => {
      const started = performance.now();
      await Promise.all(
        jobs.map(({ client, job }) => {
          const first = rest ? third(job) : 0;
          const count = rest ? job.count - first : third(job);
          const samples = Math.max(0, Math.min(job.samples - first, count));
          return ask(client, { type: 'open', job: { ...job, count, samples } }, 'opened');
        }),
      );
      return (performance.now() - started) / 1000;
    };
    const before = await rss();
    let acceptSeconds = await open(false);
    const atThird = await rss();
    acceptSeconds += await open(true);
    const after = await rss();
    const heldAtThird = jobs.reduce((sum, { job }) => sum + third(job), 0);
    const held = perNode * target.nodes.length;
    const rssFigures = (way: 'quick' | 'settled'): RssFigures => {
      const sum = (readings: { quick: number; settled: number }[]) =>
        readings.reduce((total, reading) => total + reading[way], 0);
      return {
        perSubscriber: (sum(after) - sum(before)) / held,
        marginal: (sum(after) - sum(atThird)) / (held - heldAtThird),
        mb: sum(after) / 2 ** 20,
      };
    };
    for (let update = 0; update < UPDATES; update++) {
      await target.publish(String(performance.timeOrigin + performance.now()));
      await sleep(1000 / UPDATES_PER_SECOND);
    }
    await sleep(2000);
    const delays: number[] = [];
    for (const { client } of jobs)
      delays.push(...((await ask(client, { type: 'delays' }, 'delays')).delays as number[]));
    delays.sort((a, b) => a - b);
    const at = (p: number) =>
      delays[Math.min(delays.length - 1, Math.floor(p * delays.length))] ?? Number.NaN;
    const samples = jobs.reduce((sum, { job }) => sum + job.samples, 0);
    return {
      held,
      acceptSeconds,
      quick: rssFigures('quick'),
      settled: rssFigures('settled'),
      delivered: delays.length,
      expected: samples * UPDATES,
      p50: at(0.5),
      p99: at(0.99),
    };
  } finally {
    for (const client of clients) client.kill('SIGKILL');
  }
}

async function main(): Promise<void> {
  const hard = hardOpenFiles();
  const wanted = Math.ceil(SUBSCRIBERS / NODES);
  // Over h2c a node holds a file per connection, not per subscriber.
  const perNode = H2C ? wanted : Math.min(wanted, hard - NODE_FILES);
  const load = () =>
    loadavg()
      .map((value) => value.toFixed(2))
      .join(' ');
  console.log(
    `hub-scale: ${NODES} node(s) × ${perNode} subscribers` +
      (H2C ? ` as HTTP/2 streams, ${STREAMS_PER_CONNECTION} per connection (h2c)` : ' on HTTP/1.1') +
      (perNode < wanted
        ? ` (CAPPED: ${wanted} asked, but the hard open-file limit here is ${hard}: a node holds at most ${hard - NODE_FILES})`
        : '') +
      `; sample ${SAMPLE}, ${UPDATES} updates at ${UPDATES_PER_SECOND}/s; node ${process.version}${HUB_ARGS.length > 0 ? ` (hub flags: ${HUB_ARGS.join(' ')})` : ''}; load average ${load()}`,
  );
  const redis = NODES > 1 ? await RedisServer.start() : undefined;
  const hubs: HubProcess[] = [];
  let baselines: ChildProcess[] = [];
  try {
    // The baseline: one minimal server per node, each holding as many.
    const baselinePorts = await Promise.all(target(NODES, () => freePort()));
    const baselineH2cPorts = H2C ? await Promise.all(target(NODES, () => freePort())) : [];
    baselines = await Promise.all(
      baselinePorts.map((port, index) =>
        forkRole(['--baseline', String(port), ...(H2C ? [String(baselineH2cPorts[index])] : [])]),
      ),
    );
    const baselineFigures = await run(
      {
        name: 'baseline',
        nodes: baselinePorts.map((port, index) => ({
          port: H2C ? (baselineH2cPorts[index] as number) : port,
          pid: baselines[index]?.pid as number,
        })),
        samplePath: '/sample',
        publish: async (data) => {
          // The baseline has no fan-out between processes: each gets the update, as Redis would.
          await Promise.all(
            baselinePorts.map((port) => fetch(`http://127.0.0.1:${port}/`, { method: 'POST', body: data })),
          );
        },
      },
      perNode,
    );
    for (const child of baselines) child.kill('SIGKILL');

    const environment: Record<string, string> = {
      MERCURE_ANONYMOUS: '1',
      MERCURE_HEARTBEAT: '0',
      MERCURE_WRITE_TIMEOUT: '0',
      LOG_LEVEL: 'warn',
      ...(redis ? { REDIS_URL: redis.url, MERCURE_REDIS_PREFIX: uniquePrefix('scale') } : {}),
    };
    const hubH2cPorts = H2C ? await Promise.all(target(NODES, () => freePort())) : [];
    hubs.push(
      ...(await Promise.all(
        target(NODES, (index) =>
          spawnHub(
            { ...environment, ...(H2C ? { MERCURE_H2C_PORT: String(hubH2cPorts[index]) } : {}) },
            { nodeArguments: HUB_ARGS },
          ),
        ),
      )),
    );
    const token = publisherToken();
    let turn = 0;
    const hubFigures = await run(
      {
        name: 'hub',
        nodes: hubs.map((hub, index) => ({
          port: H2C ? (hubH2cPorts[index] as number) : hub.port,
          pid: hub.child.pid as number,
        })),
        samplePath: `/.well-known/mercure?match=${encodeURIComponent(SAMPLE_TOPIC)}`,
        publish: async (data) => {
          const hub = hubs[turn++ % hubs.length] as HubProcess;
          const response = await fetch(hub.url, {
            method: 'POST',
            headers: {
              authorization: `Bearer ${token}`,
              'content-type': 'application/x-www-form-urlencoded',
              'x-forwarded-proto': 'https',
            },
            body: new URLSearchParams({ topic: SAMPLE_TOPIC, data }).toString(),
          });
          if (response.status !== 200)
            throw new Error(`publish: ${response.status} ${await response.text()}`);
        },
      },
      perNode,
    );

    const rows: [string, string, string, string][] = [
      ['subscribers held', `${hubFigures.held}`, `${baselineFigures.held}`, ''],
      [
        'time to accept them (s)',
        hubFigures.acceptSeconds.toFixed(1),
        baselineFigures.acceptSeconds.toFixed(1),
        `${(hubFigures.acceptSeconds / baselineFigures.acceptSeconds).toFixed(2)}×`,
      ],
      ...(['settled', 'quick'] as const).flatMap((way): [string, string, string, string][] => {
        const hub = hubFigures[way];
        const baseline = baselineFigures[way];
        const when = way === 'settled' ? 'settled' : `after ${QUICK_READINGS} s`;
        return [
          [
            `RSS per subscriber, ${when} (bytes)`,
            hub.perSubscriber.toFixed(0),
            baseline.perSubscriber.toFixed(0),
            `${(hub.perSubscriber / baseline.perSubscriber).toFixed(2)}×`,
          ],
          [
            `RSS per subscriber, marginal: from a third held to all, ${when} (bytes)`,
            hub.marginal.toFixed(0),
            baseline.marginal.toFixed(0),
            `${(hub.marginal / baseline.marginal).toFixed(2)}×`,
          ],
          [`RSS of the node(s) holding them, ${when} (MB)`, hub.mb.toFixed(0), baseline.mb.toFixed(0), ''],
        ];
      }),
      [
        'sample deliveries received / sent',
        `${hubFigures.delivered} / ${hubFigures.expected}`,
        `${baselineFigures.delivered} / ${baselineFigures.expected}`,
        '',
      ],
      ['delivery p50 (ms)', hubFigures.p50.toFixed(1), baselineFigures.p50.toFixed(1), ''],
      ['delivery p99 (ms)', hubFigures.p99.toFixed(1), baselineFigures.p99.toFixed(1), ''],
    ];
    console.log('| measure | hub | baseline | hub / baseline |');
    console.log('|---|---|---|---|');
    for (const row of rows) console.log(`| ${row.join(' | ')} |`);
    console.log(`load average at the end ${load()}`);
  } finally {
    for (const child of baselines) child.kill('SIGKILL');
    await Promise.all(hubs.map((hub) => hub.stop()));
    await redis?.destroy();
  }
}

function target<T>(count: number, make: (index: number) => T): T[] {
  return Array.from({ length: count }, (_, index) => make(index));
}

const role = process.argv[2];
if (role === '--baseline')
  runBaseline(Number(process.argv[3]), process.argv[4] ? Number(process.argv[4]) : undefined);
else if (role === '--client') runClient();
else await main();

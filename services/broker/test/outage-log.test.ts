/*
 * A broker node's log across a Redis outage (issue #9, defect 9): one line when Redis is lost,
 * one when it is back with the outage length, no stack traces, however many requests were
 * refused and reconnect attempts failed in between.
 */
import assert from 'node:assert/strict';
import { subscribe, unsubscribe } from 'node:diagnostics_channel';
import type { Socket } from 'node:net';
import { after, before, test } from 'node:test';
import { parseEnv } from '@herald/config';
import { closeRedis, createRedis, parseRedisOptions } from '@herald/redis';
import { logSink, RedisServer, uniquePrefix, waitFor } from '@herald/testkit';
import { brokerSpec } from '../src/config.js';
import { type Broker, startBroker } from '../src/index.js';
import { client, queueName } from './helpers.js';

/** Failed reconnect attempts to wait for during the outage, per connection the node held. */
const ROUNDS = 4;
const JOBS = ['lease-sweep', 'retention', 'stats'];

/**
 * This process's TCP connections to Redis on `port`, as node:net reports each one it opens
 * (diagnostics channel `net.client.socket`: ioredis's, for the node and for BullMQ): how many
 * are open, and how many attempts Redis refused (ECONNREFUSED, every failed reconnect).
 */
function watchConnections(port: number) {
  const open = new Set<Socket>();
  let refused = 0;
  const onSocket = (message: unknown) => {
    const { socket } = message as { socket: Socket };
    socket.once('connect', () => {
      if (socket.remotePort !== port) return;
      open.add(socket);
      socket.once('close', () => open.delete(socket));
    });
    socket.once('error', (error: NodeJS.ErrnoException & { port?: number }) => {
      if (error.code === 'ECONNREFUSED' && error.port === port) refused += 1;
    });
  };
  subscribe('net.client.socket', onSocket);
  return {
    open: () => open.size,
    refused: () => refused,
    stop: () => unsubscribe('net.client.socket', onSocket),
  };
}

const sink = logSink();
let server: RedisServer;
let prefix: string;
let connections: ReturnType<typeof watchConnections>;
let broker: Broker;
let api: ReturnType<typeof client>;
before(async () => {
  // Durable: Redis comes back with its data, so the only news is the outage itself. (Without it
  // Redis came back empty and the recreated job schedulers were a legitimate second warning,
  // missed only while the kill raced ahead of their creation at boot.)
  server = await RedisServer.start({ appendOnly: true });
  connections = watchConnections(server.port);
  prefix = uniquePrefix('broker');
  const config = parseEnv(brokerSpec, {
    PORT: '0',
    HOST: '127.0.0.1',
    REDIS_URL: server.url,
    BROKER_KEY_PREFIX: prefix,
    BROKER_LEASE_SWEEP_INTERVAL: '200',
    BROKER_RETENTION_INTERVAL: '500',
    BROKER_STATS_INTERVAL: '500',
    SHUTDOWN_TIMEOUT: '2000',
  });
  broker = await startBroker(config, { fastify: { logger: { level: 'info', stream: sink.stream } } });
  api = client(broker.url);
});
after(async () => {
  await broker.close();
  await server.destroy();
  connections.stop();
});

test('an outage with refused requests and failed reconnects logs one line lost, one back, no stacks', async () => {
  const queue = queueName('logged');
  assert.equal((await api.push([{ queue, payload: 1 }])).status, 201);
  // Ready: the maintenance job schedulers exist before the outage.
  await waitFor(async () => (await api.call('GET', '/readyz')).status === 200, { what: 'ready' });
  const before = sink.lines.length;
  const line = (pattern: RegExp) => () =>
    sink
      .records()
      .slice(before)
      .find((record) => pattern.test(String(record.msg)));

  const held = connections.open();
  const refusedBefore = connections.refused();
  const killedAt = Date.now();
  await server.kill();
  await waitFor(async () => (await api.call('GET', '/readyz')).status === 503, { what: 'not ready' });
  await waitFor(line(/^Redis at .* lost/), { what: 'the "lost" line' });
  const lostSeenAt = Date.now();
  for (let n = 0; n < 10; n++) {
    assert.equal((await api.push([{ queue, payload: n }])).status, 503);
    assert.equal((await api.pop(queue)).status, 503);
  }
  // Reconnect attempts fail meanwhile: as many as ROUNDS of each connection the node held (the
  // backoff's first steps, 100 to 800 ms), while maintenance jobs (every 200-500 ms) cannot run.
  await waitFor(() => connections.refused() - refusedBefore >= ROUNDS * held, {
    timeoutMs: 30_000,
    what: `${ROUNDS * held} refused reconnect attempts (${held} connections)`,
  });
  const launchedAt = Date.now();
  await server.launch();
  await waitFor(async () => (await api.call('GET', '/readyz')).status === 200, { what: 'ready again' });
  const backLine = await waitFor(line(/^Redis at .* is back after/), { what: 'the "back" line' });
  const backSeenAt = Date.now();
  // After the outage every maintenance job ran again (its heartbeat stamp is newer than the
  // "back" line): what the node does once Redis is back is in the log below too.
  const reader = createRedis(parseRedisOptions(server.url));
  try {
    await waitFor(
      async () => {
        const stamps = await reader.hgetall(`{${prefix}bull}:herald-maintenance-heartbeat`);
        return JOBS.every((job) => Number(stamps[job]) > Number(backLine.time));
      },
      { timeoutMs: 30_000, what: 'every maintenance job to run after the outage' },
    );
  } finally {
    await closeRedis(reader);
  }

  const during = sink.records().slice(before);
  const about = (pattern: RegExp) => during.filter((record) => pattern.test(String(record.msg)));
  const report = JSON.stringify(during, null, 1);
  assert.equal(about(/^Redis at .* lost/).length, 1, report);
  const back = about(/^Redis at .* is back after/);
  assert.equal(back.length, 1, report);
  // The outage as the node measured it: from its "lost" line (seen after the kill) to its "back"
  // line (seen after the relaunch).
  const outageMs = Number(back[0]?.outageMs);
  assert.ok(outageMs >= launchedAt - lostSeenAt && outageMs <= backSeenAt - killedAt, report);
  // The failed attempts were counted, not logged one by one.
  assert.ok(Number(back[0]?.reconnectAttempts) > 0, report);
  assert.doesNotMatch(report, /"stack"|\n\s+at /, 'no stack trace in the log');
  const warnings = during.filter((record) => Number(record.level) >= 40);
  assert.equal(warnings.length, 1, `one warning (the lost line), got:\n${report}`);
});

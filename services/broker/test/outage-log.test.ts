/*
 * A broker node's log across a Redis outage (issue #9, defect 9): one line when Redis is lost,
 * one when it is back with the outage length, no stack traces, however many requests were
 * refused and reconnect attempts failed in between.
 */
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { parseEnv } from '@herald/config';
import { logSink, RedisServer, uniquePrefix, waitFor } from '@herald/testkit';
import { brokerSpec } from '../src/config.js';
import { type Broker, startBroker } from '../src/index.js';
import { client, queueName } from './helpers.js';

const sink = logSink();
let server: RedisServer;
let broker: Broker;
let api: ReturnType<typeof client>;
before(async () => {
  // Durable: Redis comes back with its data, so the only news is the outage itself. (Without it
  // Redis came back empty and the recreated job schedulers were a legitimate second warning,
  // missed only while the kill raced ahead of their creation at boot.)
  server = await RedisServer.start({ appendOnly: true });
  const config = parseEnv(brokerSpec, {
    PORT: '0',
    HOST: '127.0.0.1',
    REDIS_URL: server.url,
    BROKER_KEY_PREFIX: uniquePrefix('broker'),
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
});

test('an outage with refused requests and failed reconnects logs one line lost, one back, no stacks', async () => {
  const queue = queueName('logged');
  assert.equal((await api.push([{ queue, payload: 1 }])).status, 201);
  // Ready: the maintenance job schedulers exist before the outage.
  await waitFor(async () => (await api.call('GET', '/readyz')).status === 200, { what: 'ready' });
  const before = sink.lines.length;

  await server.kill();
  await waitFor(async () => (await api.call('GET', '/readyz')).status === 503, { what: 'not ready' });
  for (let n = 0; n < 10; n++) {
    assert.equal((await api.push([{ queue, payload: n }])).status, 503);
    assert.equal((await api.pop(queue)).status, 503);
  }
  // Reconnect attempts and maintenance runs fail meanwhile (backoff up to 2 s, jobs every 200-500 ms).
  await sleep(3000);
  await server.launch();
  await waitFor(async () => (await api.call('GET', '/readyz')).status === 200, { what: 'ready again' });
  await sleep(1500);

  const during = sink.records().slice(before);
  const about = (pattern: RegExp) => during.filter((line) => pattern.test(String(line.msg)));
  const report = JSON.stringify(during, null, 1);
  assert.equal(about(/^Redis at .* lost/).length, 1, report);
  const back = about(/^Redis at .* is back after/);
  assert.equal(back.length, 1, report);
  assert.ok(Number(back[0]?.outageMs) >= 3000, report);
  assert.doesNotMatch(report, /"stack"|\n\s+at /, 'no stack trace in the log');
  const warnings = during.filter((line) => Number(line.level) >= 40);
  assert.equal(warnings.length, 1, `one warning (the lost line), got:\n${report}`);
});

/*
 * Maintenance re-establishes itself when Redis comes back empty (issue #9, defect 6): after a
 * FLUSHALL and after a restart without persistence the BullMQ job schedulers are recreated and
 * stats are written again; readiness fails while the jobs cannot run.
 */
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { after, before, test } from 'node:test';
import { type Broker, brokerSpec, startBroker } from '@herald/broker';
import { parseEnv } from '@herald/config';
import { RedisServer, waitFor } from '@herald/testkit';
import { call } from './nodes.js';

let redis: RedisServer;
let broker: Broker;

before(async () => {
  redis = await RedisServer.start();
  broker = await startBroker(
    parseEnv(brokerSpec, {
      PORT: '0',
      HOST: '127.0.0.1',
      LOG_LEVEL: 'silent',
      REDIS_URL: redis.url,
      SHUTDOWN_TIMEOUT: '3000',
      BROKER_LEASE_SWEEP_INTERVAL: '100',
      BROKER_RETENTION_INTERVAL: '200',
      BROKER_STATS_INTERVAL: '200',
    }),
    { fastify: { logger: false } },
  );
});
after(async () => {
  await broker.close();
  await redis.destroy();
});

function redisCli(...args: string[]): string {
  const result = spawnSync('redis-cli', ['-p', String(redis.port), ...args], { encoding: 'utf8' });
  assert.equal(result.status, 0, result.stderr);
  return result.stdout.trim();
}

/** Pushes to a queue nobody used yet, then waits for the stats job to list it. */
async function statsWrittenFor(queue: string): Promise<void> {
  // Right after a Redis restart the node may not have reconnected yet: it answers 503 at once
  // (docs/broker.md, "Outages") and the client retries, as clients do.
  await waitFor(
    async () => {
      const pushed = await call(broker.url, 'POST', '/api/v1/push', {
        items: [{ queue, partition: 'p', payload: { queue }, transactionId: `push-${queue}` }],
      });
      assert.ok(pushed.status === 201 || pushed.status === 503, `push answered ${pushed.status}`);
      return pushed.status === 201;
    },
    { what: `a push to ${queue}`, timeoutMs: 10_000 },
  );
  await waitFor(
    async () => (await call(broker.url, 'GET', `/api/v1/status/queues/${queue}`)).status === 200,
    {
      what: `the stats job to list ${queue}`,
      timeoutMs: 20_000,
    },
  );
}

const ready = async () => (await call(broker.url, 'GET', '/readyz')).status === 200;

test('maintenance comes back after Redis is emptied', { timeout: 90_000 }, async (t) => {
  await waitFor(ready, { what: 'readiness at start' });
  await statsWrittenFor('heal.start');

  const cases: [string, () => Promise<void>][] = [
    ['FLUSHALL', async () => void redisCli('FLUSHALL')],
    ['restart without persistence', () => redis.restart()],
  ];
  for (const [name, empty] of cases) {
    await t.test(name, async () => {
      await empty();
      await statsWrittenFor(`heal.${name.split(' ')[0]?.toLowerCase()}`);
      const schedulers = redisCli('--scan', '--pattern', '*broker-maintenance:repeat*');
      assert.notEqual(schedulers, '', 'job schedulers recreated');
      await waitFor(ready, { what: `readiness after ${name}`, timeoutMs: 20_000 });
    });
  }
});

test('readiness fails while maintenance jobs cannot run, and recovers', { timeout: 60_000 }, async () => {
  await waitFor(ready, { what: 'readiness before the pause' });
  // Writes paused, reads and PING served: storage looks healthy, but no job can be taken.
  redisCli('CLIENT', 'PAUSE', '8000', 'WRITE');
  const reasons = await waitFor(
    async () => {
      const reply = await call<{ reasons?: string[] }>(broker.url, 'GET', '/readyz');
      return reply.status === 503 ? reply.body.reasons : undefined;
    },
    { what: 'readiness to fail while writes are paused', timeoutMs: 8000 },
  );
  assert.ok(
    reasons.some((reason) => reason.startsWith('maintenance: jobs not run lately')),
    JSON.stringify(reasons),
  );
  await waitFor(ready, { what: 'readiness after the pause', timeoutMs: 20_000 });
});

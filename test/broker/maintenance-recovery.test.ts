/*
 * Maintenance re-establishes itself when Redis comes back empty (issue #9, defect 6): after a
 * FLUSHALL and after a restart without persistence the BullMQ job schedulers are recreated and
 * stats are written again; readiness fails while the jobs cannot run. A queue the node had
 * already registered before Redis was emptied is registered again by its next push, so the
 * maintenance jobs (stats, lease sweep, retention) still see it.
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
  // (docs/broker-operations.md, "Outages") and the client retries, as clients do.
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
  // The queue list's message counts come from the stats snapshot (0 until the job counted it).
  const counted = async () =>
    (await call<{ queues: QueueEntry[] }>(broker.url, 'GET', '/api/v1/resources/queues')).body.queues.some(
      (entry) => entry.name === queue && entry.messages.total > 0,
    );
  await waitFor(counted, {
    what: `the stats job to list ${queue}`,
    timeoutMs: 20_000,
  });
}

interface QueueEntry {
  name: string;
  messages: { total: number };
}

/** A lease left unanswered must expire: the sweep job reaches every queue in the queue set. */
async function leaseExpires(queue: string): Promise<void> {
  assert.equal(
    (await call(broker.url, 'POST', '/api/v1/configure', { queue, options: { leaseTime: 1 } })).status,
    200,
  );
  const pushed = await call(broker.url, 'POST', '/api/v1/push', {
    items: [{ queue, payload: { queue }, transactionId: `lease-${Date.now()}` }],
  });
  assert.equal(pushed.status, 201);
  assert.equal((await call(broker.url, 'GET', `/api/v1/pop/queue/${queue}`)).status, 200);
  const again = await waitFor(
    async () => {
      const popped = await call<{
        messages: { transactionId: string; partitionId: string; leaseId: string }[];
      }>(broker.url, 'GET', `/api/v1/pop/queue/${queue}`);
      return popped.status === 200 ? popped.body.messages[0] : undefined;
    },
    { what: `the lease on ${queue} to expire and the message to come back`, timeoutMs: 15_000 },
  );
  // Resolved, so that nothing is left for the sweep to write during the pause test below.
  const acked = await call(broker.url, 'POST', '/api/v1/ack', { ...again, status: 'completed' });
  assert.equal(acked.status, 200);
}

const ready = async () => (await call(broker.url, 'GET', '/readyz')).status === 200;

test('maintenance comes back after Redis is emptied', { timeout: 90_000 }, async (t) => {
  await waitFor(ready, { what: 'readiness at start' });
  await statsWrittenFor('heal.start');
  await leaseExpires('heal.lease');

  const cases: [string, () => Promise<void>][] = [
    ['FLUSHALL', async () => void redisCli('FLUSHALL')],
    ['restart without persistence', () => redis.restart()],
  ];
  for (const [name, empty] of cases) {
    await t.test(name, async () => {
      await empty();
      await statsWrittenFor(`heal.${name.split(' ')[0]?.toLowerCase()}`);
      // Known to this node before Redis lost it: the node must not trust its own memory of it.
      await statsWrittenFor('heal.start');
      await leaseExpires('heal.lease');
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
  // A script of a job already running when the pause began blocks the data connection as well,
  // so a storage reason may come first; the maintenance reason must follow.
  await waitFor(
    async () => {
      const reply = await call<{ reasons?: string[] }>(broker.url, 'GET', '/readyz');
      const found = reply.body.reasons ?? [];
      return found.some((reason) => reason.startsWith('maintenance: jobs not run lately'))
        ? found
        : undefined;
    },
    { what: 'readiness to fail for maintenance while writes are paused', timeoutMs: 8000 },
  );
  await waitFor(ready, { what: 'readiness after the pause', timeoutMs: 20_000 });
});

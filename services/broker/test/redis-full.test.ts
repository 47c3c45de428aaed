/*
 * Redis full: used memory above maxmemory with the noeviction policy the broker needs. Before,
 * every script that writes answered 500: pushes with no word of why, and pops and acks as well,
 * so consumers could not drain the queue that filled Redis; BullMQ could not take a maintenance
 * job (its scripts add data), so retention never freed anything and every node turned not ready.
 * Now pushes answer 503 HERALD_BROKER_STORAGE_FULL and store nothing, pops, acks and retention
 * go on (lua/includes/drain-when-full.lua), the node runs the maintenance jobs itself while
 * BullMQ cannot (maintenance.ts) and stays ready. `CONFIG SET maxmemory 1` makes Redis full at once.
 */
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { asRedisUnavailable } from '@herald/redis';
import { RedisServer, uniquePrefix, waitFor } from '@herald/testkit';
import { Redis } from 'ioredis';
import type { Broker } from '../src/index.js';
import { STALE_GRACE_MS, STALE_INTERVALS } from '../src/maintenance.js';
import { type BrokerClient, client, queueName, startTestBroker } from './helpers.js';

/** Every maintenance job's interval here (the lease sweep's is the helper's 200 ms too). */
const RETENTION_MS = 200;

let server: RedisServer;
let admin: Redis;
let broker: Broker;
let api: BrokerClient;
const prefix = uniquePrefix('full');

before(async () => {
  server = await RedisServer.start();
  admin = new Redis(server.url);
  broker = await startTestBroker('redis', {
    REDIS_URL: server.url,
    BROKER_KEY_PREFIX: prefix,
    BROKER_RETENTION_INTERVAL: String(RETENTION_MS),
    BROKER_STATS_INTERVAL: String(RETENTION_MS),
  });
  api = client(broker.url);
});
after(async () => {
  await broker?.close();
  admin?.disconnect();
  await server?.destroy();
});

const items = (queue: string, from: number, count: number) =>
  Array.from({ length: count }, (_, index) => ({
    queue,
    partition: 'p',
    transactionId: `t${from + index}`,
    payload: { n: from + index },
  }));

test('Redis answers a write while full with OOM, which the nodes read as "full"', async () => {
  await admin.config('SET', 'maxmemory', '1');
  try {
    const refused = await admin.set(`${prefix}probe`, 'x').catch((error: unknown) => error);
    assert.equal(asRedisUnavailable(refused)?.reason, 'full', String(refused));
  } finally {
    await admin.config('SET', 'maxmemory', '0');
  }
});

test('a full Redis: pushes are refused with 503, consumers drain, retention frees, the node stays ready', {
  timeout: 60_000,
}, async () => {
  const queue = queueName('full');
  const stream = `${prefix}{${encodeURIComponent(queue)}}:s:p`;
  assert.equal(
    (await api.configure(queue, { retentionEnabled: true, completedRetentionSeconds: 1 })).status,
    200,
  );
  assert.equal((await api.push(items(queue, 0, 20))).status, 201);

  await admin.config('SET', 'maxmemory', '1');
  try {
    const refused = await api.push(items(queue, 20, 5));
    assert.equal(refused.status, 503, JSON.stringify(refused.body));
    assert.match(String((refused.body as { error: string }).error), /^Storage full/);
    assert.equal(refused.headers.get('retry-after'), '1');
    assert.equal(await admin.xlen(stream), 20, 'the refused push stored nothing');

    // Consumers drain the queue that filled Redis.
    const popped = await api.pop(queue, 'batch=20&wait=false');
    assert.equal(popped.status, 200, JSON.stringify(popped.body));
    const messages = (
      popped.body as { messages: { transactionId: string; partitionId: string; leaseId: string }[] }
    ).messages;
    assert.equal(messages.length, 20);
    const acked = await api.ackBatch({
      acknowledgments: messages.map((message) => ({ ...message, status: 'completed' })),
    });
    assert.equal(acked.status, 200);
    assert.ok((acked.body as { success: boolean }[]).every((result) => result.success));

    // Retention runs (on the node's own timers: BullMQ cannot take a job) and frees them.
    await waitFor(async () => (await admin.xlen(stream)) === 0, {
      what: 'retention deleting the consumed messages while Redis is full',
      timeoutMs: 20_000,
      intervalMs: 100,
    });
    // Still ready once BullMQ's last runs are stale (STALE_INTERVALS of every job and the grace):
    // the node's own runs count.
    const heartbeat = `{${prefix}bull}:herald-maintenance-heartbeat`;
    const staleAfterMs = STALE_INTERVALS * RETENTION_MS + STALE_GRACE_MS;
    await waitFor(
      async () => Date.now() - Math.max(0, ...(await admin.hvals(heartbeat)).map(Number)) > staleAfterMs,
      { what: "BullMQ's last maintenance runs to go stale", timeoutMs: 20_000, intervalMs: 100 },
    );
    const ready = await fetch(`${broker.url}/readyz`);
    assert.equal(ready.status, 200, await ready.text());
  } finally {
    await admin.config('SET', 'maxmemory', '0');
  }
  assert.equal((await api.push(items(queue, 20, 5))).status, 201);
});

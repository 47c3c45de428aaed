/*
 * MERCURE_PARTITIONS is one value per deployment (docs/hub.md, "Topic partitions"): nodes with
 * different values publish and listen on different partitions, so their subscribers would miss
 * each other's updates without any error. The value of the running nodes is recorded in Redis;
 * a node started with another one is not ready (kept out of the load balancer) until the record
 * expires, every node of the other value having stopped.
 */
import assert from 'node:assert/strict';
import { after, test } from 'node:test';
import { createRedis, KeyClock, redisTopologyFromEnv } from '@herald/redis';
import { testRedisEnvironment, uniquePrefix, waitFor } from '@herald/testkit';
import { cleanupRedis, startTestHub, type TestHub } from './helpers.js';

after(cleanupRedis);

async function readiness(hub: TestHub): Promise<{ status: number; body: string }> {
  const reply = await fetch(`${hub.origin}/readyz`);
  return { status: reply.status, body: await reply.text() };
}

test('a node whose MERCURE_PARTITIONS differs from the running nodes is not ready until they are gone', async () => {
  const prefix = uniquePrefix('hub-record');
  const environment = await testRedisEnvironment();
  const topology = redisTopologyFromEnv(environment);
  assert.ok(topology);
  const admin = createRedis({ topology });
  const hubs: TestHub[] = [];
  // Each node checks the record at start, then every probe interval (500 ms) of this clock.
  const clock = new KeyClock(Date.now());
  const start = async (partitions: number) => {
    const hub = await startTestHub(
      'redis',
      { ...environment, MERCURE_REDIS_PREFIX: prefix, MERCURE_PARTITIONS: String(partitions) },
      { clock },
    );
    hubs.push(hub);
    return hub;
  };
  try {
    const one = await start(1);
    await waitFor(async () => (await readiness(one)).status === 200);

    const eight = await start(8);
    let refused = { status: 0, body: '' };
    await waitFor(async () => {
      refused = await readiness(eight);
      return refused.body.includes('MERCURE_PARTITIONS');
    });
    assert.equal(refused.status, 503);
    assert.match(refused.body, /MERCURE_PARTITIONS=8 but the deployment's running nodes use 1/);
    assert.equal((await readiness(one)).status, 200, 'the running node stays ready');

    // Every node with 1 stops; the record expires (deleted here rather than waited for).
    await one.close();
    await admin.del(`${prefix}{hub}:partitions`);
    // Its next check claims the record.
    await clock.advance(500);
    await waitFor(async () => (await readiness(eight)).status === 200);

    // Now 8 is the deployment's value: a node started with 1 is the odd one.
    const late = await start(1);
    await waitFor(async () => (await readiness(late)).body.includes('MERCURE_PARTITIONS=1 but'));
    assert.equal((await readiness(eight)).status, 200);
  } finally {
    admin.disconnect();
    for (const hub of hubs) await hub.close().catch(() => undefined);
  }
});

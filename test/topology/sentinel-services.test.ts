/*
 * Both services read the Redis topology with the one parser of @herald/redis (issue #12): a
 * conflicting configuration stops each at boot with one line naming the variable (never the
 * password), and REDIS_SENTINELS + REDIS_SENTINEL_MASTER run each on a Sentinel-managed primary.
 */
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { after, before, test } from 'node:test';
import { RedisSentinelSet, uniquePrefix } from '@herald/testkit';
import { assertPushPop, MAIN as BROKER_MAIN, BrokerNode } from '../broker/nodes.js';
import { HUB_MAIN, publishOk, spawnHub } from '../hub/support.js';

const SECRET = 'never-print-this-password';

let set: RedisSentinelSet;
before(async () => {
  set = await RedisSentinelSet.start();
});
after(async () => {
  await set?.stop();
});

for (const [service, main] of [
  ['hub', HUB_MAIN],
  ['broker', BROKER_MAIN],
] as const) {
  test(`the ${service} refuses two Redis topologies at once, naming the variable, not the password`, () => {
    const result = spawnSync(process.execPath, [main], {
      env: {
        PATH: process.env.PATH ?? '',
        MERCURE_PUBLISHER_JWT_KEY: 'k'.repeat(32),
        REDIS_URL: `redis://app:${SECRET}@127.0.0.1:1`,
        REDIS_CLUSTER_NODES: '127.0.0.1:2',
      },
      encoding: 'utf8',
      timeout: 30_000,
    });
    assert.equal(result.status, 1, result.stderr);
    assert.equal(
      result.stderr.trim(),
      'configuration error: REDIS_CLUSTER_NODES: set together with REDIS_URL; set exactly one of REDIS_URL, REDIS_SENTINELS, REDIS_CLUSTER_NODES',
    );
    assert.doesNotMatch(result.stderr + result.stdout, new RegExp(SECRET));
  });
}

test('the broker on REDIS_SENTINELS: ready, push and pop go through the Sentinel-managed primary', async () => {
  const node = await BrokerNode.start({
    REDIS_SENTINELS: set.sentinels.join(','),
    REDIS_SENTINEL_MASTER: set.masterName,
    BROKER_KEY_PREFIX: uniquePrefix('sentinel'),
  });
  try {
    await assertPushPop(node.url, 'sentinel.q');
  } finally {
    await node.stop();
  }
});

test('the hub on REDIS_SENTINELS: ready (its pub/sub probe came back) and publishes', async () => {
  const node = await spawnHub({
    REDIS_SENTINELS: set.sentinels.join(','),
    REDIS_SENTINEL_MASTER: set.masterName,
    MERCURE_REDIS_PREFIX: uniquePrefix('sentinel-hub'),
  });
  try {
    assert.ok(await node.isReady(), node.output());
    await publishOk(node.url, { topic: 'https://example.com/sentinel', data: 'through sentinel' });
  } finally {
    await node.stop();
  }
});

import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { Cluster } from 'ioredis';
import { keySlot, RedisCluster } from '../src/index.js';

let cluster: RedisCluster;
before(async () => {
  cluster = await RedisCluster.start();
});
after(async () => {
  await cluster?.stop();
});

function client(): Cluster {
  const seeds = cluster.nodes.map((node) => {
    const [host, port] = node.split(':');
    return { host: host as string, port: Number(port) };
  });
  return new Cluster(seeds, { scaleReads: 'master', redisOptions: { maxRetriesPerRequest: null } });
}

test('key slots follow the cluster spec, hash tags included', () => {
  // Values from the cluster specification and CLUSTER KEYSLOT.
  assert.equal(keySlot('123456789'), 12739);
  assert.equal(keySlot('foo'), 12182);
  assert.equal(keySlot('{user1000}.following'), keySlot('user1000'));
  assert.equal(keySlot('foo{}{bar}'), keySlot('foo{}{bar}'));
  assert.notEqual(keySlot('foo{}{bar}'), keySlot('bar'));
});

test('3 primaries with a replica each serve all slots; writes land on the primary of their slot', async () => {
  const primaries = await cluster.primaries();
  assert.equal(primaries.length, 3);
  assert.equal(cluster.nodes.length, 6);
  const topology = await cluster.topology();
  assert.equal(topology.filter((node) => node.role === 'replica').length, 3);

  const redis = client();
  try {
    const keys = ['alpha', 'beta', 'gamma', 'delta', 'epsilon', 'zeta'];
    for (const key of keys) await redis.set(key, `value-${key}`);
    for (const key of keys) {
      assert.equal(await redis.get(key), `value-${key}`);
      const port = await cluster.primaryForKey(key);
      assert.equal(port, await cluster.primaryForSlot(keySlot(key)));
      // Ask the owning primary directly: the key is there, not on another shard.
      const direct = redis.nodes('master').find((node) => node.options.port === port);
      assert.ok(direct, `a connection to the primary ${port}`);
      assert.equal(await direct.get(key), `value-${key}`);
    }
  } finally {
    redis.disconnect();
  }
});

test('kill -9 of a primary: its replica takes over and the client keeps reading and writing', async () => {
  const redis = client();
  try {
    const key = '{failover}:counter';
    await redis.set(key, '1');
    // Written on the replica too before the kill (replication is asynchronous).
    const primaryPort = await cluster.primaryForKey(key);
    await redis.wait(1, 2000);
    await cluster.kill(primaryPort);
    const promoted = await cluster.waitForFailover(primaryPort);
    assert.notEqual(promoted, primaryPort);
    assert.equal(await cluster.primaryForKey(key), promoted);
    assert.equal(await redis.incr(key), 2);
    assert.equal(await redis.get(key), '2');

    // The killed node rejoins as a replica of the promoted one.
    await cluster.restart(primaryPort);
    const rejoined = (await cluster.topology()).find((node) => node.port === primaryPort);
    assert.equal(rejoined?.role, 'replica');
  } finally {
    redis.disconnect();
  }
});

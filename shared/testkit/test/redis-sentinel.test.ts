import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { Redis } from 'ioredis';
import { RedisSentinelSet } from '../src/index.js';

let set: RedisSentinelSet;
before(async () => {
  set = await RedisSentinelSet.start();
});
after(async () => {
  await set?.stop();
});

function client(): Redis {
  const sentinels = set.sentinels.map((sentinel) => {
    const [host, port] = sentinel.split(':');
    return { host: host as string, port: Number(port) };
  });
  const redis = new Redis({ sentinels, name: set.masterName, role: 'master', maxRetriesPerRequest: null });
  // Connection errors are expected while the primary is dead; the test asserts on commands.
  redis.on('error', () => undefined);
  return redis;
}

test('the set has one primary, two replicas and three sentinels that agree', async () => {
  assert.equal(set.sentinels.length, 3);
  assert.equal(set.serverPorts.length, 3);
  const primary = await set.primary();
  assert.ok(set.serverPorts.includes(primary));

  const redis = client();
  try {
    await redis.set('greeting', 'hello');
    assert.equal(await redis.get('greeting'), 'hello');
    const info = await redis.info('replication');
    assert.match(info, /role:master/);
    assert.match(info, /connected_slaves:2/);
  } finally {
    redis.disconnect();
  }
});

test('kill -9 of the primary: the sentinels promote a replica and the client follows it', async () => {
  const redis = client();
  try {
    await redis.set('survivor', 'before');
    await redis.wait(2, 2000);
    const killed = await set.killPrimary();
    const promoted = await set.waitForFailover(killed);
    assert.notEqual(promoted, killed);
    assert.equal(await set.primary(), promoted);
    // The sentinel-aware client reconnects to the new primary by itself.
    await redis.set('survivor', 'after');
    assert.equal(await redis.get('survivor'), 'after');
    assert.match(await redis.info('server'), new RegExp(`tcp_port:${promoted}\\r?\\n`));
  } finally {
    redis.disconnect();
  }
});

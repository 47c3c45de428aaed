import assert from 'node:assert/strict';
import { once } from 'node:events';
import { after, test } from 'node:test';
import { createMetrics } from '@herald/metrics';
import { RedisServer, waitFor } from '@herald/testkit';
import { createRedis, instrumentRedis, parseRedisOptions, probeRedis } from '../src/index.js';

const servers: RedisServer[] = [];
after(async () => {
  for (const server of servers) await server.destroy();
});

test('only redis:// and rediss:// URLs are accepted', () => {
  assert.throws(
    () => parseRedisOptions('http://127.0.0.1:6379'),
    /REDIS_URL: expected redis:\/\/ or rediss:\/\//,
  );
  assert.equal(parseRedisOptions('rediss://user:pw@host:6380/2').topology.kind, 'standalone');
});

test('the health probe reports a live server, then a dead one within its deadline, then recovery', async () => {
  const server = await RedisServer.start();
  servers.push(server);
  const redis = createRedis(parseRedisOptions(server.url, { failFast: true }));
  await once(redis, 'ready');
  try {
    const healthy = await probeRedis(redis);
    assert.equal(healthy.ok, true);
    assert.ok((healthy.latencyMs ?? -1) >= 0);

    await server.kill();
    const dead = await probeRedis(redis, 300);
    assert.equal(dead.ok, false);
    assert.ok(dead.error);

    // The connection reconnects by itself once Redis is back.
    await server.launch();
    await waitFor(async () => (await probeRedis(redis, 300)).ok, { what: 'reconnect' });
  } finally {
    redis.disconnect();
  }
});

test('instrumentation times commands, pipelines included, by command name', async () => {
  const server = await RedisServer.start();
  servers.push(server);
  const metrics = createMetrics();
  const redis = createRedis(parseRedisOptions(server.url));
  instrumentRedis(redis, metrics.redisCommandDuration);
  try {
    await redis.set('k', 'v');
    await redis.pipeline().get('k').get('k').exec();
    const text = await metrics.registry.metrics();
    assert.match(text, /herald_redis_command_duration_seconds_count\{command="set"\} 1/);
    assert.match(text, /herald_redis_command_duration_seconds_count\{command="get"\} 2/);
  } finally {
    await redis.quit();
  }
});

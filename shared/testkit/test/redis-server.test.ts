import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { after, test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { Redis } from 'ioredis';
import { RedisServer, redisServerMissingMessage } from '../src/index.js';

const servers: RedisServer[] = [];
after(async () => {
  for (const server of servers) await server.destroy();
});

test('an append-only private server keeps acknowledged writes across a SIGKILL', async () => {
  const server = await RedisServer.start({ appendOnly: true });
  servers.push(server);
  const before = new Redis(server.url);
  await before.set('durable', 'yes');
  before.disconnect();

  await server.kill();
  await server.launch();

  const afterRestart = new Redis(server.url);
  try {
    assert.equal(await afterRestart.get('durable'), 'yes');
  } finally {
    afterRestart.disconnect();
  }
});

test('a server without append-only loses its data on restart', async () => {
  const server = await RedisServer.start();
  servers.push(server);
  const client = new Redis(server.url, { maxRetriesPerRequest: null });
  try {
    await client.set('volatile', 'yes');
    await server.restart();
    assert.equal(await client.get('volatile'), null);
  } finally {
    client.disconnect();
  }
});

test('without redis-server on PATH the error names the package to install', () => {
  const fixture = fileURLToPath(new URL('./fixtures/start-redis.ts', import.meta.url));
  const result = spawnSync(process.execPath, ['--import', 'tsx', fixture], {
    env: { ...process.env, PATH: '/nonexistent' },
    encoding: 'utf8',
  });
  assert.equal(result.stdout.trim(), redisServerMissingMessage);
  assert.match(result.stdout, /apt-get install redis-server/);
});

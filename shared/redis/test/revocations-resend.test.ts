/*
 * The deny list's writes are MULTI blocks whose second run gives the same state
 * (docs/contracts.md, "Redis scripts"; shared/redis/src/revocations.ts): the reply to EXEC is
 * swallowed and the connection dropped after Redis applied it; ioredis refuses the transaction
 * (it does not resend a MULTI) as Redis unavailable, the admin retries, one entry remains.
 */
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { RedisServer, ReplyLossProxy, uniquePrefix } from '@herald/testkit';
import {
  createRedis,
  KeyClock,
  parseRedisOptions,
  type Redis,
  RedisRevocationStore,
  RedisUnavailableError,
} from '../src/index.js';

interface Entry {
  readonly id: string;
  readonly expiresAt?: number;
}

let server: RedisServer;
let proxy: ReplyLossProxy;
let client: Redis;
before(async () => {
  server = await RedisServer.start();
  proxy = await ReplyLossProxy.start({ port: server.port });
  client = createRedis(parseRedisOptions(proxy.url, { connectionName: 'revocations-resend' }));
});
after(async () => {
  client.disconnect();
  await proxy.close();
  await server.destroy();
});

test('an add whose EXEC reply was lost is refused as unavailable, and its retry leaves one entry', async () => {
  const store = new RedisRevocationStore<Entry>({
    redis: client,
    prefix: uniquePrefix('revocations-resend'),
    clock: new KeyClock(1_800_000_000_000),
    codec: { idOf: (entry) => entry.id, parse: (value) => value as Entry },
  });
  const entry = { id: 'jti:resent', expiresAt: 1_800_000_060_000 };
  const lost = proxy.loseNextReply((request) => request[0] === 'exec');
  await assert.rejects(store.add(entry), RedisUnavailableError);
  const [command] = await lost;
  assert.equal(command, 'exec');
  await store.add(entry);
  assert.deepEqual(await store.list(), [entry]);
  const reader = createRedis(parseRedisOptions(server.url));
  try {
    const keys = (await reader.keys('*revocations*')).sort();
    assert.equal(keys.length, 3, keys.join(', '));
    const entries = keys.find((key) => key.endsWith(':entries')) ?? '';
    assert.equal(await reader.hlen(entries), 1);
  } finally {
    reader.disconnect();
  }
});

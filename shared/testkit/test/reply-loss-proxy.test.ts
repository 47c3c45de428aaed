import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { after, before, test } from 'node:test';
import { Redis } from 'ioredis';
import { RedisServer, ReplyLossProxy, scriptCall } from '../src/index.js';

let server: RedisServer;
let proxy: ReplyLossProxy;
before(async () => {
  server = await RedisServer.start();
  proxy = await ReplyLossProxy.start({ port: server.port });
});
after(async () => {
  await proxy.close();
  await server.destroy();
});

function client(): Redis {
  // The broker's and hub's settings: queue and resend through reconnects.
  return new Redis(proxy.url, { maxRetriesPerRequest: null, retryStrategy: () => 20 });
}

test('a lost reply makes ioredis resend the command, which Redis then runs twice', async () => {
  const redis = client();
  try {
    const lost = proxy.loseNextReply((request) => request[0] === 'incr' && request[1] === 'counter');
    const reply = await redis.incr('counter');
    assert.deepEqual(await lost, ['incr', 'counter']);
    // The first INCR ran (its reply was swallowed); the resent one answered.
    assert.equal(reply, 2);
    assert.equal(await redis.get('counter'), '2');
    assert.equal(proxy.seen.filter((r) => r[0] === 'incr' && r[1] === 'counter').length, 2);
  } finally {
    redis.disconnect();
  }
});

test('replies of requests sent together keep their order around a lost one', async () => {
  const redis = client();
  try {
    await redis.mset('a', '1', 'b', '2', 'c', '3');
    const lostBefore = proxy.lost;
    const lost = proxy.loseNextReply((request) => request[0] === 'get' && request[1] === 'b');
    // Written in one turn: one chunk, three requests in flight.
    const replies = await Promise.all([redis.get('a'), redis.get('b'), redis.get('c')]);
    await lost;
    assert.deepEqual(replies, ['1', '2', '3']);
    assert.equal(proxy.lost, lostBefore + 1);
  } finally {
    redis.disconnect();
  }
});

test('scriptCall matches EVALSHA and its EVAL fallback; an error reply leaves the trap armed', async () => {
  const redis = client();
  try {
    const source = "redis.call('RPUSH', KEYS[1], ARGV[1]); return redis.call('LRANGE', KEYS[1], 0, -1)";
    const sha = createHash('sha1').update(source).digest('hex');
    const lost = proxy.loseNextReply(scriptCall({ sha, source }));
    // Not loaded yet: EVALSHA answers NOSCRIPT (forwarded), the EVAL fallback runs and is lost.
    await assert.rejects(redis.evalsha(sha, 1, 'list', 'x'), /NOSCRIPT/);
    const reply = await redis.eval(source, 1, 'list', 'x');
    assert.equal((await lost)[0], 'eval');
    // Not idempotent: the resend appended a second time, which is what the proxy exposes.
    assert.deepEqual(reply, ['x', 'x']);
    assert.deepEqual(await redis.lrange('list', 0, -1), ['x', 'x']);
  } finally {
    redis.disconnect();
  }
});

test('a subscribing connection becomes a plain pipe', async () => {
  const subscriber = client();
  const publisher = client();
  try {
    await subscriber.subscribe('ch');
    const received = new Promise<string>((resolve) => subscriber.on('message', (_c, m) => resolve(m)));
    await publisher.publish('ch', 'hello');
    assert.equal(await received, 'hello');
  } finally {
    subscriber.disconnect();
    publisher.disconnect();
  }
});

test('a trapped request cut off by an earlier lost reply keeps its trap for the resend', async () => {
  const redis = client();
  try {
    await redis.mset('d', '4', 'e', '5', 'f', '6');
    const lostBefore = proxy.lost;
    const fired: string[] = [];
    const first = proxy.loseNextReply((request) => request[0] === 'get' && request[1] === 'd');
    const second = proxy.loseNextReply((request) => request[0] === 'get' && request[1] === 'f');
    void first.then(() => fired.push('d'));
    void second.then(() => fired.push('f'));
    // One chunk: losing d's reply drops the connection before f's reply is read.
    const replies = await Promise.all([redis.get('d'), redis.get('e'), redis.get('f')]);
    assert.deepEqual(replies, ['4', '5', '6']);
    // f's trap swallowed the resent GET f, so both fired before the last resend answered.
    assert.deepEqual(fired, ['d', 'f']);
    assert.equal(proxy.lost, lostBefore + 2);
    assert.equal(proxy.seen.filter((r) => r[0] === 'get' && r[1] === 'f').length, 3);
  } finally {
    redis.disconnect();
  }
});

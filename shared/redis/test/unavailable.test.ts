/*
 * Typed "Redis could not serve it" (issue #11, item 4): the failures that mean "not done, retry
 * later" become a RedisUnavailableError (a HeraldError answered 503 without its text); anything
 * else (a failed script, a bug) stays what it is.
 */
import assert from 'node:assert/strict';
import { after, test } from 'node:test';
import { publicMessage } from '@herald/errors';
import { freePort } from '@herald/testkit';
import { ReplyError } from 'ioredis';
import {
  asRedisUnavailable,
  createRedis,
  parseRedisOptions,
  type Redis,
  RedisUnavailableError,
  type RedisUnavailableReason,
} from '../src/index.js';

const connections: Redis[] = [];
after(() => {
  for (const redis of connections) redis.disconnect();
});

// [failure, reason it maps to, or undefined for "not an unavailability"]
// biome-ignore format: a table, one case per line
const CASES: readonly (readonly [string, unknown, RedisUnavailableReason | undefined])[] = [
  ['a refused socket', Object.assign(new Error('connect ECONNREFUSED 10.0.0.7:6379'), { code: 'ECONNREFUSED' }), 'disconnected'],
  ['a reset socket', Object.assign(new Error('read ECONNRESET'), { code: 'ECONNRESET' }), 'disconnected'],
  ['a closed connection', new Error('Connection is closed.'), 'disconnected'],
  ['Redis loading its data', new ReplyError('LOADING Redis is loading the dataset in memory'), 'not-serving'],
  ['a primary turned replica', new ReplyError("READONLY You can't write against a read only replica."), 'not-serving'],
  ['a replica without its primary', new ReplyError('MASTERDOWN Link with MASTER is down'), 'not-serving'],
  ['a failed script', new ReplyError('ERR user_script:1: Script attempted to access nonexistent global'), undefined],
  ['a reply merely starting with the word', new ReplyError('LOADINGS is not a code'), undefined],
  ['a LOADING text that is not a reply', new Error('LOADING Redis is loading'), undefined],
  ['a bug', new TypeError('Cannot read properties of undefined'), undefined],
  ['a thrown string', 'ECONNREFUSED', undefined],
];

for (const [what, failure, reason] of CASES) {
  test(`${what} → ${reason ?? 'not an unavailability'}`, () => {
    const typed = asRedisUnavailable(failure);
    assert.equal(typed?.reason, reason);
    if (typed) assert.equal(typed.cause, failure);
  });
}

test('a fail-fast refusal is answered as is', () => {
  const refusal = new RedisUnavailableError('timeout', 'no reply from Redis at 10.0.0.7:6379 within 1000 ms');
  assert.equal(asRedisUnavailable(refusal), refusal);
});

test('is a HeraldError answered 503 with the standard text, never its own', () => {
  const refusal = new RedisUnavailableError('disconnected', 'Redis at 10.0.0.7:6379 unreachable');
  assert.equal(refusal.code, 'HERALD_REDIS_UNAVAILABLE');
  assert.equal(refusal.statusCode, 503);
  assert.equal(refusal.expose, false);
  assert.equal(publicMessage(refusal), 'Service Unavailable');
});

test('a command on a connection to no Redis fails with an error it recognises', async () => {
  const redis = createRedis(parseRedisOptions(`redis://127.0.0.1:${await freePort()}`, { failFast: true }));
  redis.on('error', () => undefined);
  connections.push(redis);
  const failure = await redis.ping().then(
    () => assert.fail('PING answered'),
    (error: unknown) => error,
  );
  assert.equal(asRedisUnavailable(failure)?.reason, 'disconnected', String(failure));
});

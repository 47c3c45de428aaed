/*
 * What a client reads when a request fails on the server side (issue #11, item 4): a storage
 * failure answers 503 with a fixed text, anything unexpected 500 with the status's text; the
 * internal message (a Redis address, Redis's own reply, a script line) never reaches the body.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { RedisUnavailableError } from '@herald/redis';
import Fastify from 'fastify';
import { ReplyError } from 'ioredis';
import { registerConventions } from '../src/routes/common.js';

const INTERNAL = '10.0.0.7:6379';

// [failure thrown by the storage, status, body]
// biome-ignore format: a table, one case per line
const CASES: readonly (readonly [string, () => Error, number, string])[] = [
  ['a fail-fast refusal', () => new RedisUnavailableError('disconnected', `Redis at ${INTERNAL} unreachable (connection lost 1.2 s ago)`), 503, 'Storage unavailable; retry later'],
  ['a deadline refusal', () => new RedisUnavailableError('timeout', `no reply from Redis at ${INTERNAL} within 1000 ms`), 503, 'Storage unavailable; retry later'],
  ['a refused socket', () => Object.assign(new Error(`connect ECONNREFUSED ${INTERNAL}`), { code: 'ECONNREFUSED' }), 503, 'Storage unavailable; retry later'],
  ['a closed connection', () => new Error(`Connection is closed. (${INTERNAL})`), 503, 'Storage unavailable; retry later'],
  ['Redis loading its data', () => new ReplyError(`LOADING Redis is loading the dataset in memory (${INTERNAL})`), 503, 'Storage unavailable; retry later'],
  ['a replica after a failover', () => new ReplyError(`READONLY You can't write against a read only replica. (${INTERNAL})`), 503, 'Storage unavailable; retry later'],
  ['a failed script', () => new ReplyError(`ERR user_script:12: Script attempted to access ${INTERNAL}`), 500, 'Internal Server Error'],
  ['a bug', () => new TypeError(`Cannot read properties of undefined (reading '${INTERNAL}')`), 500, 'Internal Server Error'],
];

for (const [what, failure, status, message] of CASES) {
  test(`${what} answers ${status} "${message}" without its internal text`, async () => {
    const app = Fastify({ logger: false });
    registerConventions(app);
    app.get('/fail', async () => {
      throw failure();
    });
    const reply = await app.inject({ method: 'GET', url: '/fail' });
    await app.close();
    assert.equal(reply.statusCode, status);
    assert.deepEqual(reply.json(), { error: message });
    assert.ok(!reply.body.includes(INTERNAL), `internal text in ${reply.body}`);
  });
}

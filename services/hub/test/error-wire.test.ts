/*
 * What a client reads when a hub request fails on the server side (issue #11, item 4): a backend
 * that cannot serve answers 503 with the hub's fixed text, anything unexpected 500 with the
 * status's text; the internal message (a Redis address, Redis's own reply) never reaches the body.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { createMetrics } from '@herald/metrics';
import { RedisUnavailableError } from '@herald/redis';
import { ReplyError } from 'ioredis';
import { parseHubConfig } from '../src/config.js';
import { HubError, TransportUnavailableError, unsupportedMatchType } from '../src/errors.js';
import { createHub } from '../src/hub.js';
import { PUBLISHER_SECRET, SUBSCRIBER_SECRET } from './helpers.js';

const INTERNAL = '10.0.0.7:6379';
const UNAVAILABLE = 'The update backend is unavailable; retry later';

// [failure a handler lets through, status, body]
// biome-ignore format: a table, one case per line
const CASES: readonly (readonly [string, () => Error, number, string])[] = [
  ['a transport refusal', () => new TransportUnavailableError(`Redis at ${INTERNAL} unreachable (connection lost 1.2 s ago)`), 503, UNAVAILABLE],
  ['a fail-fast Redis refusal', () => new RedisUnavailableError('disconnected', `Redis at ${INTERNAL} unreachable`), 503, UNAVAILABLE],
  ['a deadline refusal', () => new RedisUnavailableError('timeout', `no reply from Redis at ${INTERNAL} within 2000 ms`), 503, UNAVAILABLE],
  ['a refused socket', () => Object.assign(new Error(`connect ECONNREFUSED ${INTERNAL}`), { code: 'ECONNREFUSED' }), 503, UNAVAILABLE],
  ['Redis loading its data', () => new ReplyError(`LOADING Redis is loading the dataset in memory (${INTERNAL})`), 503, UNAVAILABLE],
  ['an error carrying a 503 status', () => Object.assign(new Error(`upstream ${INTERNAL} refused`), { statusCode: 503 }), 500, 'Internal Server Error'],
  ['a failed script', () => new ReplyError(`ERR user_script:12: Script attempted to access ${INTERNAL}`), 500, 'Internal Server Error'],
  ['a bug', () => new TypeError(`Cannot read properties of undefined (reading '${INTERNAL}')`), 500, 'Internal Server Error'],
  ['a fixed 501 text for the client', () => unsupportedMatchType(), 501, 'Unsupported matcher type'],
];

for (const [what, failure, status, message] of CASES) {
  test(`${what} answers ${status} "${message}" without internal text`, async () => {
    const { app } = createHub({
      config: parseHubConfig({
        LOG_LEVEL: 'silent',
        MERCURE_PUBLISHER_JWT_KEY: PUBLISHER_SECRET,
        MERCURE_SUBSCRIBER_JWT_KEY: SUBSCRIBER_SECRET,
      }),
      metrics: createMetrics(),
    });
    app.get('/fail', async () => {
      throw failure();
    });
    const reply = await app.inject({ method: 'GET', url: '/fail' });
    await app.close();
    assert.equal(reply.statusCode, status);
    assert.equal(reply.body, message);
    assert.match(String(reply.headers['content-type']), /^text\/plain/);
    assert.ok(!reply.body.includes(INTERNAL), `internal text in ${reply.body}`);
  });
}

test('a hub error code outside HERALD_HUB_<REASON> is refused when the error is built', () => {
  // The scheme before issue #11 (HUB_ERR_<X>): the type refuses it, and so does the constructor.
  assert.throws(() => new HubError('HUB_ERR_DRAINING' as `HERALD_HUB_${string}`, 503, 'x'), TypeError);
  assert.throws(() => new HubError('HERALD_HUB_draining', 503, 'x'), TypeError);
  assert.equal(new HubError('HERALD_HUB_DRAINING', 503, 'x').code, 'HERALD_HUB_DRAINING');
});

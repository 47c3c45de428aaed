/*
 * The hub's Redis reads during an outage (issue #11, items 4-5): the subscriptions API and a
 * subscribe with a Last-Event-ID read Redis before they answer. With Redis stopped or stalled they
 * answer 503 with the hub's fixed text (retry later), never 500, never a hang, and never the
 * transport's own message (it names the Redis address). Heartbeats run fast here: one written
 * while the subscribe still reads history would send an implicit 200 before the 503.
 */
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { after, before, describe, test } from 'node:test';
import { createMetrics } from '@herald/metrics';
import { RedisServer, uniquePrefix, waitFor } from '@herald/testkit';
import { parseHubConfig } from '../../services/hub/src/config.js';
import { type HubServer, startHub } from '../../services/hub/src/hub.js';
import {
  PUBLISHER_SECRET,
  SECURE,
  SseStream,
  SUBSCRIBER_SECRET,
  subscriberToken,
  subscribeUrl,
} from '../../services/hub/test/helpers.js';

const SUBSCRIPTIONS = '/.well-known/mercure/subscriptions';
const UNAVAILABLE = 'The update backend is unavailable; retry later';

describe('Redis reads of a request during a Redis fault', () => {
  let redis: RedisServer;
  let server: HubServer;
  let origin: string;
  const watcherToken = subscriberToken([{ match: SUBSCRIPTIONS }, { match: '*' }]);

  before(async () => {
    redis = await RedisServer.start();
    server = await startHub(
      parseHubConfig({
        PORT: '0',
        HOST: '127.0.0.1',
        LOG_LEVEL: 'silent',
        TRUSTED_PROXIES: '127.0.0.1',
        MERCURE_PUBLISHER_JWT_KEY: PUBLISHER_SECRET,
        MERCURE_SUBSCRIBER_JWT_KEY: SUBSCRIBER_SECRET,
        MERCURE_SUBSCRIPTIONS: '1',
        MERCURE_HEARTBEAT: '100ms',
        REDIS_URL: redis.url,
        MERCURE_REDIS_PREFIX: uniquePrefix('hub-read-fault'),
      }),
      { metrics: createMetrics(), probeInterval: 100, probeTimeout: 500 },
    );
    const address = server.app.server.address();
    origin = `http://127.0.0.1:${typeof address === 'object' && address ? address.port : 0}`;
  });
  after(async () => {
    await server.app.close();
    await redis.destroy();
  });

  const listSubscriptions = () =>
    fetch(`${origin}${SUBSCRIPTIONS}`, { headers: { ...SECURE, authorization: `Bearer ${watcherToken}` } });
  const subscribeFrom = (cursor: string) =>
    SseStream.open(
      subscribeUrl(`${origin}/.well-known/mercure`, [['match', 'https://example.com/read-fault']]),
      {
        authorization: `Bearer ${watcherToken}`,
        'last-event-id': cursor,
      },
    );
  const redisCli = (...args: string[]) =>
    execFileSync('redis-cli', ['-p', String(redis.port), ...args], { encoding: 'utf8' });
  const answering = () =>
    waitFor(async () => (await listSubscriptions()).status === 200, {
      what: 'the subscriptions API answering again',
      timeoutMs: 30_000,
    });

  const faults: { name: string; begin: () => Promise<void>; end: () => Promise<void> }[] = [
    { name: 'Redis stopped', begin: () => redis.kill(), end: () => redis.launch() },
    {
      // Connected, but no reply comes: the reads must not wait for the stall to end. A paused
      // Redis cannot be unpaused (CLIENT UNPAUSE is paused too): the pause, well past the read
      // deadline, runs out on its own.
      name: 'Redis stalled',
      begin: async () => {
        redisCli('CLIENT', 'PAUSE', '10000', 'ALL');
      },
      end: async () => undefined,
    },
  ];

  for (const { name, begin, end } of faults) {
    test(`${name}: the subscriptions API and a resuming subscribe answer 503 with the hub's text`, async () => {
      await answering();
      await begin();
      try {
        const [listed, ...resumed] = await Promise.all([
          listSubscriptions().then(async (response) => ({
            status: response.status,
            body: await response.text(),
          })),
          subscribeFrom('urn:uuid:not-in-history'),
          subscribeFrom('earliest'),
        ]);
        assert.equal(listed.status, 503, listed.body);
        assert.equal(listed.body, UNAVAILABLE);
        for (const stream of resumed) {
          assert.equal(stream.status, 503, stream.body);
          assert.equal(stream.body, UNAVAILABLE);
          assert.match(String(stream.headers['content-type']), /^text\/plain/);
        }
      } finally {
        await end();
      }
      await answering();
    });
  }
});

/*
 * The Redis transport reports, the hub decides (issue #11, item 3): the fan-out health events
 * become the hub's metrics, and a TransportUnavailableError becomes a 503 whose body is the hub's
 * message, never the transport's.
 */
import assert from 'node:assert/strict';
import { after, describe, test } from 'node:test';
import { createMetrics } from '@herald/metrics';
import { RedisServer, uniquePrefix, waitFor } from '@herald/testkit';
import { Redis } from 'ioredis';
import { parseHubConfig } from '../src/config.js';
import { asHubError, HubError, TransportUnavailableError } from '../src/errors.js';
import { startHub } from '../src/hub.js';
import { RedisTransport } from '../src/transport-redis.js';
import { cleanupRedis, PUBLISHER_SECRET, publish, publisherToken, SUBSCRIBER_SECRET } from './helpers.js';

after(cleanupRedis);

describe('transport errors and events at the hub', () => {
  test('asHubError maps a TransportUnavailableError to the 503 backend error and leaves others alone', () => {
    const mapped = asHubError(new TransportUnavailableError('publish: no reply within 5000 ms'));
    assert.ok(mapped instanceof HubError);
    assert.equal(mapped.statusCode, 503);
    assert.equal(mapped.code, 'HERALD_HUB_BACKEND_UNAVAILABLE');
    assert.equal(mapped.expose, true);
    assert.doesNotMatch(mapped.message, /5000|reply/);
    const other = new Error('other');
    assert.equal(asHubError(other), other);
  });

  test('probe events set mercure_pubsub_probe_ok; Redis gone: probe_ok 0 and a publish is a plain 503', async () => {
    const redis = await RedisServer.start();
    const server = await startHub(
      parseHubConfig({
        PORT: '0',
        HOST: '127.0.0.1',
        LOG_LEVEL: 'silent',
        TRUSTED_PROXIES: '127.0.0.1',
        MERCURE_PUBLISHER_JWT_KEY: PUBLISHER_SECRET,
        MERCURE_SUBSCRIBER_JWT_KEY: SUBSCRIBER_SECRET,
        REDIS_URL: redis.url,
        MERCURE_REDIS_PREFIX: uniquePrefix('hub-events'),
      }),
      { metrics: createMetrics(), probeInterval: 100, probeTimeout: 500 },
    );
    try {
      const address = server.app.server.address();
      const origin = `http://127.0.0.1:${typeof address === 'object' && address ? address.port : 0}`;
      const metric = async () => {
        const text = await (await fetch(`${origin}/metrics`)).text();
        return /^mercure_pubsub_probe_ok(?:\{[^}]*\})? (\d)/m.exec(text)?.[1];
      };
      assert.equal(await metric(), '1');
      await redis.kill();
      await waitFor(async () => (await metric()) === '0', { what: 'mercure_pubsub_probe_ok 0' });
      const refused = await publish(
        `${origin}/.well-known/mercure`,
        { topic: 'https://example.com/e' },
        { token: publisherToken() },
      );
      assert.equal(refused.status, 503);
      assert.equal(refused.body, 'The update backend is unavailable; retry later');
    } finally {
      await server.app.close();
      await redis.destroy();
    }
  });

  test('a subscription ready before the transport started still reports its first reconnect', async () => {
    // Defect: the fan-out counted 'ready' events to tell a reconnect from the first connect, so
    // when the subscriber connection was up before start() (the node awaited other work first)
    // its first reconnect was taken for the first connect: no fanout-reconnected event, no
    // mercure_pubsub_reconnects_total, no log line (the gap was still filled).
    const redis = await RedisServer.start();
    const admin = new Redis(redis.url);
    const transport = new RedisTransport({
      url: redis.url,
      prefix: uniquePrefix('hub-ready-first'),
      historySize: 100,
      historyTtl: 0,
      metrics: createMetrics(),
      subscriptions: false,
      subscriptionsLease: 15_000,
      probeInterval: 100,
      probeTimeout: 500,
    });
    try {
      const subscriber = (transport as unknown as { subscriber: Redis }).subscriber;
      await waitFor(() => subscriber.status === 'ready', { what: 'the subscriber connection, before start' });
      let reconnects = 0;
      transport.events.on('fanout-reconnected', () => {
        reconnects += 1;
      });
      await transport.start(() => undefined);
      await admin.client('KILL', 'TYPE', 'pubsub');
      await waitFor(() => reconnects === 1, { what: 'fanout-reconnected after the subscriber was cut' });
    } finally {
      await transport.stop();
      admin.disconnect();
      await redis.destroy();
    }
  });
});

describe('a full Redis (maxmemory reached)', () => {
  test('publishes are refused as unavailable, with one warning rather than an error each', async () => {
    // Defect: each publish a full Redis refused logged an error line, at the publish rate.
    const redis = await RedisServer.start();
    const admin = new Redis(redis.url);
    const lines: { level: string; message: string }[] = [];
    const transport = new RedisTransport({
      url: redis.url,
      prefix: uniquePrefix('hub-full'),
      historySize: 100,
      historyTtl: 0,
      metrics: createMetrics(),
      subscriptions: false,
      subscriptionsLease: 15_000,
      log: (level, message) => lines.push({ level, message }),
    });
    const update = (n: number) => ({
      id: `urn:full:${n}`,
      topics: ['https://example.com/full'],
      data: 'd',
      private: false,
    });
    try {
      await transport.start(() => undefined);
      await transport.publish(update(0));
      await admin.config('SET', 'maxmemory', '1');
      for (let n = 1; n <= 5; n++) {
        await assert.rejects(transport.publish(update(n)), TransportUnavailableError);
      }
      const said = lines.filter((line) => line.level !== 'info');
      assert.deepEqual(said, [
        { level: 'warn', message: 'Redis is full (maxmemory): publishes are refused until memory is freed' },
      ]);
      await admin.config('SET', 'maxmemory', '0');
      await transport.publish(update(6));
    } finally {
      await transport.stop();
      admin.disconnect();
      await redis.destroy();
    }
  });
});

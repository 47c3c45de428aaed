import assert from 'node:assert/strict';
import { after, describe, test } from 'node:test';
import {
  cleanupRedis,
  publishOk,
  SseStream,
  startTestHub,
  subscriberToken,
  subscribeUrl,
} from './helpers.js';

after(cleanupRedis);

describe('connection lifetime, heartbeat, drain', () => {
  test('an idle stream receives heartbeat comments', async () => {
    const hub = await startTestHub('memory', { MERCURE_ANONYMOUS: '1', MERCURE_HEARTBEAT: '60ms' });
    try {
      const stream = await SseStream.open(subscribeUrl(hub.url, [['match', 'https://example.com/hb']]));
      const opening = stream.comments;
      await stream.until(() => stream.comments >= opening + 2);
      assert.equal(stream.events.length, 0);
      stream.close();
    } finally {
      await hub.close();
    }
  });

  test('MERCURE_WRITE_TIMEOUT closes a stream (randomised within 80-100 %)', async () => {
    const hub = await startTestHub('memory', { MERCURE_ANONYMOUS: '1', MERCURE_WRITE_TIMEOUT: '300ms' });
    try {
      const stream = await SseStream.open(subscribeUrl(hub.url, [['match', 'https://example.com/life']]));
      await stream.closed();
      assert.ok(stream.ended);
    } finally {
      await hub.close();
    }
  });

  test('draining: not ready at once, new subscribers get 503, open streams are closed', async () => {
    const hub = await startTestHub('memory', { MERCURE_ANONYMOUS: '1', MERCURE_DRAIN_WINDOW: '200ms' });
    const streams = await Promise.all(
      Array.from({ length: 4 }, () =>
        SseStream.open(subscribeUrl(hub.url, [['match', 'https://example.com/drain']])),
      ),
    );
    const shutdown = hub.server.shutdown('test');
    const ready = await fetch(`${hub.origin}/readyz`).catch(() => undefined);
    if (ready) assert.equal(ready.status, 503);
    await Promise.all(streams.map((stream) => stream.closed()));
    await shutdown;
  });

  test('a subscriber refused while draining gets 503', async () => {
    const hub = await startTestHub('memory', { MERCURE_ANONYMOUS: '1', MERCURE_DRAIN_WINDOW: '10s' });
    const open = await SseStream.open(subscribeUrl(hub.url, [['match', 'https://example.com/drain2']]));
    const drained = hub.server.hub.drain(Date.now() + 30_000);
    const refused = await SseStream.open(subscribeUrl(hub.url, [['match', 'https://example.com/drain2']]));
    assert.equal(refused.status, 503);
    await open.closed();
    await drained;
    await hub.close();
  });

  test('readiness and metrics', async () => {
    const hub = await startTestHub('memory', { MERCURE_ANONYMOUS: '1' });
    try {
      assert.equal((await fetch(`${hub.origin}/readyz`)).status, 200);
      assert.equal((await fetch(`${hub.origin}/healthz`)).status, 200);
      const stream = await SseStream.open(subscribeUrl(hub.url, [['match', 'https://example.com/m']]), {
        authorization: `Bearer ${subscriberToken([{ match: '*' }])}`,
      });
      await publishOk(hub.url, { topic: 'https://example.com/m' });
      await stream.waitForEvents(1);
      await SseStream.open(subscribeUrl(hub.url, [['match', 'https://example.com/m']]), {
        authorization: 'Bearer x.y.z',
      });
      const text = await (await fetch(`${hub.origin}/metrics`)).text();
      for (const name of [
        'mercure_subscribers_connected 1',
        'mercure_subscribers_total 1',
        'mercure_updates_total 1',
        'mercure_deliveries_total 1',
        'mercure_publish_duration_seconds_bucket',
        'mercure_fanout_duration_seconds_bucket',
        'mercure_auth_failures_total{reason=',
        'mercure_history_length 1',
        'mercure_slow_subscriber_disconnects_total',
        'mercure_pubsub_reconnects_total',
        'mercure_pubsub_probe_ok',
        'nodejs_eventloop_lag_seconds',
        'herald_ready',
      ]) {
        assert.ok(text.includes(name), `metrics include ${name}`);
      }
      stream.close();
    } finally {
      await hub.close();
    }
  });
});

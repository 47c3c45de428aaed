import assert from 'node:assert/strict';
import { after, describe, test } from 'node:test';
import { KeyClock } from '@herald/redis';
import type { Subscriber } from '../src/subscriber.js';
import {
  cleanupRedis,
  publishOk,
  SseStream,
  startTestHub,
  subscriberToken,
  subscribeUrl,
  type TestHub,
} from './helpers.js';

after(cleanupRedis);

/** The hub's only subscriber. */
function onlySubscriber(hub: TestHub): Subscriber {
  const subscribers = [...hub.server.hub.index.all()];
  assert.equal(subscribers.length, 1);
  return subscribers[0] as Subscriber;
}

describe('connection lifetime, heartbeat, drain', () => {
  test('an idle stream receives heartbeat comments', async () => {
    // Heartbeat rounds run every 250 ms of the hub's clock (a quarter of MERCURE_HEARTBEAT), the
    // first 250 ms after start; the clock does not move until the test moves it.
    const start = Date.now();
    const clock = new KeyClock(start);
    const hub = await startTestHub('memory', { MERCURE_ANONYMOUS: '1', MERCURE_HEARTBEAT: '1s' }, { clock });
    try {
      const stream = await SseStream.open(subscribeUrl(hub.url, [['match', 'https://example.com/hb']]));
      const opening = stream.comments;
      const subscriber = onlySubscriber(hub);
      assert.equal(subscriber.lastWriteAt, start);
      // A round 1 ms before the stream has been idle for 1 s writes nothing (a heartbeat would
      // move lastWriteAt: the round runs inside the clock's move).
      await clock.set(start + 749);
      await clock.set(start + 999);
      assert.equal(subscriber.lastWriteAt, start, 'no heartbeat before 1 s idle');
      // The next round (250 ms later) is past it: one heartbeat.
      await clock.set(start + 1249);
      assert.equal(subscriber.lastWriteAt, start + 1249);
      await stream.until(() => stream.comments >= opening + 1);
      // Idle again from the heartbeat: a round 1 ms before 1 s since it writes nothing.
      await clock.set(start + 1249 + 749);
      await clock.set(start + 1249 + 999);
      assert.equal(subscriber.lastWriteAt, start + 1249, 'no heartbeat before 1 s since the last');
      await clock.set(start + 1249 + 1249);
      assert.equal(subscriber.lastWriteAt, start + 2498);
      await stream.until(() => stream.comments >= opening + 2);
      assert.equal(stream.comments, opening + 2);
      assert.equal(stream.events.length, 0);
      stream.close();
    } finally {
      await hub.close();
    }
  });

  test('MERCURE_WRITE_TIMEOUT closes a stream (randomised within 80-100 %)', async () => {
    const start = Date.now();
    const clock = new KeyClock(start);
    const hub = await startTestHub(
      'memory',
      { MERCURE_ANONYMOUS: '1', MERCURE_HEARTBEAT: '0', MERCURE_WRITE_TIMEOUT: '10s' },
      { clock },
    );
    try {
      const reasons: string[] = [];
      hub.server.hub.events.on('subscriber-closed', (event: { reason: string }) =>
        reasons.push(event.reason),
      );
      const stream = await SseStream.open(subscribeUrl(hub.url, [['match', 'https://example.com/life']]));
      const subscriber = onlySubscriber(hub);
      // 1 ms before 80 % of the lifetime: open (a close runs inside the clock's move).
      await clock.set(start + 8000 - 1);
      assert.equal(subscriber.closed, false, 'open before 80 % of MERCURE_WRITE_TIMEOUT');
      assert.deepEqual(reasons, []);
      // Past 100 %: closed, for its lifetime.
      await clock.set(start + 10_000);
      assert.equal(subscriber.closed, true, 'closed by 100 % of MERCURE_WRITE_TIMEOUT');
      assert.deepEqual(reasons, ['lifetime']);
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

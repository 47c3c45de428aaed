import assert from 'node:assert/strict';
import { after, describe, test } from 'node:test';
import { stopTestRedis, testRedisEnvironment, uniquePrefix, waitFor } from '@herald/testkit';
import { publishOk, SseStream, spawnHub, subscribeUrl } from './support.js';

after(stopTestRedis);

describe('graceful drain on SIGTERM', () => {
  test('not ready at once, new subscribers refused, streams closed over the window, exit 0', async () => {
    const node = await spawnHub({
      ...(await testRedisEnvironment()),
      MERCURE_REDIS_PREFIX: uniquePrefix('drain'),
      MERCURE_ANONYMOUS: '1',
      MERCURE_DRAIN_WINDOW: '1500ms',
      SHUTDOWN_TIMEOUT: '10s',
    });
    const topic = 'https://example.com/drain';
    const streams = await Promise.all(
      Array.from({ length: 6 }, () => SseStream.open(subscribeUrl(node.url, [['match', topic]]))),
    );
    const id = await publishOk(node.url, { topic });
    await Promise.all(streams.map((stream) => stream.waitForEvents(1)));

    const closedAt: number[] = [];
    const allClosed = Promise.all(
      streams.map((stream) => stream.closed().then(() => closedAt.push(Date.now()))),
    );
    node.child.kill('SIGTERM');
    // The signal is handled asynchronously: a probe answered before the handler ran still says
    // 200. Readiness must turn 503 while the node is still serving (the listener stays open
    // during the drain window), and stay 503 from then on.
    await waitFor(async () => (await fetch(`${node.origin}/readyz`)).status === 503, {
      what: 'readiness to fail after SIGTERM',
    });
    assert.equal((await fetch(`${node.origin}/readyz`)).status, 503);
    const late = await SseStream.open(subscribeUrl(node.url, [['match', topic]])).catch(() => undefined);
    if (late) assert.equal(late.status, 503, 'a subscriber arriving while draining is refused');
    await allClosed;
    const { code } = await node.exited;
    assert.equal(code, 0);
    // Spread, not all at once: the last stream closed strictly after the first.
    assert.ok(Math.max(...closedAt) > Math.min(...closedAt));
    for (const stream of streams) assert.equal(stream.events[0]?.id, id);
  });
});

/*
 * Issue #13: just after a push, the views showed `partitions: 1` (the queue list, live) beside
 * zero counts (the stats snapshot, not yet taken). Queen's JSON shapes stay as they are; the
 * response headers say where the counts come from and how old they are (views.ts, statsHeaders).
 * In-process backend with a stats interval of a day: no snapshot is taken unless asked, so the
 * state before the refresh is known.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { client, queueName, startTestBroker } from './helpers.js';

test('snapshot views say snapshot, its time and age, and how many queues it does not cover yet', async () => {
  const broker = await startTestBroker('memory', { BROKER_STATS_INTERVAL: '24h' });
  try {
    const api = client(broker.url);
    const queue = queueName('fresh');
    const pushed = await api.call('POST', '/api/v1/push', { items: [{ queue, payload: { n: 1 } }] });
    assert.equal(pushed.status, 201);

    const snapshotRoutes = [
      '/api/v1/resources/queues',
      '/api/v1/resources/namespaces',
      '/api/v1/resources/tasks',
      '/api/v1/resources/overview',
      '/api/v1/status',
      '/api/v1/status/queues',
      '/api/v1/consumer-groups',
    ];
    const before = await fetch(`${broker.url}/api/v1/resources/queues`);
    const listed = (
      (await before.json()) as { queues: { name: string; partitions: number; messages: { total: number } }[] }
    ).queues.find((q) => q.name === queue);
    // The live list knows the queue and its partition; the snapshot does not count it yet, and says so.
    assert.equal(listed?.partitions, 1);
    assert.equal(listed?.messages.total, 0);
    assert.equal(before.headers.get('herald-stats-source'), 'snapshot');
    assert.equal(before.headers.get('herald-stats-at'), 'none');
    assert.equal(before.headers.get('herald-stats-age'), '-1');
    assert.equal(before.headers.get('herald-stats-missing'), '1');

    const refreshStarted = Date.now();
    assert.equal((await api.call('POST', '/api/v1/stats/refresh')).status, 200);
    const refreshEnded = Date.now();
    for (const route of snapshotRoutes) {
      const response = await fetch(`${broker.url}${route}`);
      assert.equal(response.status, 200, route);
      assert.equal(response.headers.get('herald-stats-source'), 'snapshot', route);
      const at = Date.parse(response.headers.get('herald-stats-at') ?? '');
      assert.ok(
        at >= refreshStarted - 1 && at <= refreshEnded + 1,
        `${route}: ${response.headers.get('herald-stats-at')}`,
      );
      assert.match(response.headers.get('herald-stats-age') ?? '', /^\d+$/, route);
      assert.equal(response.headers.get('herald-stats-missing'), '0', route);
    }
    const after = (await (await fetch(`${broker.url}/api/v1/resources/queues`)).json()) as {
      queues: { name: string; messages: { total: number } }[];
    };
    assert.equal(after.queues.find((q) => q.name === queue)?.messages.total, 1);

    // A per-partition view reads the partitions when asked.
    const live = await fetch(`${broker.url}/api/v1/resources/queues/${queue}`);
    assert.equal(live.headers.get('herald-stats-source'), 'live');
  } finally {
    await broker.close();
  }
});

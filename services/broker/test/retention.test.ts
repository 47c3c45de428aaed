/*
 * Retention, eviction and maxSize as Queen applies them (docs/broker-api.md "Queue options"), over
 * HTTP, on both backends. Time-based rules use 1 s windows: the broker runs on a clock the
 * tests move past them (clockedBrokerSuite), never on time they wait for.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { stopTestRedis, testRedisUrl, uniquePrefix } from '@herald/testkit';
import { Redis } from 'ioredis';
import type { Broker } from '../src/index.js';
import { BACKENDS, client, clockedBrokerSuite, queueName, startTestBroker } from './helpers.js';

after(() => stopTestRedis());

/** Past a 1 s option window. */
const PAST_ONE_SECOND = 1001;

for (const backend of BACKENDS) {
  describe(`broker retention and maxSize (${backend})`, () => {
    const suite = clockedBrokerSuite(backend);

    const pushMany = (queue: string, count: number, label = 'm') =>
      suite.api.push(
        Array.from({ length: count }, (_, i) => ({ queue, payload: i, transactionId: `${label}${i}` })),
      );
    const messageStatus = async (partitionId: string, transactionId: string) =>
      (await suite.api.call('GET', `/api/v1/messages/${partitionId}/${transactionId}`)).status;

    test('maxSize counts only unresolved messages: once consumed, pushes are admitted again', async () => {
      const queue = await suite.queue('maxsize');
      await suite.api.configure(queue, { maxSize: 5 });
      assert.equal((await pushMany(queue, 5)).status, 201);
      assert.equal((await suite.api.push([{ queue, payload: 'over' }])).status, 429);
      const popped = await suite.api.pop(queue, 'batch=5&autoAck=true');
      assert.equal(popped.body.messages.length, 5);
      // The five are resolved (and retained: retention is off by default) and no longer count.
      assert.equal((await pushMany(queue, 5, 'again')).status, 201);
      assert.equal((await suite.api.push([{ queue, payload: 'over' }])).status, 429);
    });

    test('maxSize with consumer groups counts the backlog of the slowest group', async () => {
      const queue = await suite.queue('maxsize-groups');
      await suite.api.configure(queue, { maxSize: 4 });
      // Both groups exist before the pushes (subscriptionMode all: they read everything).
      assert.equal((await suite.api.pop(queue, 'consumerGroup=fast')).status, 204);
      assert.equal((await suite.api.pop(queue, 'consumerGroup=slow')).status, 204);
      assert.equal((await pushMany(queue, 4)).status, 201);
      assert.equal(
        (await suite.api.pop(queue, 'consumerGroup=fast&batch=4&autoAck=true')).body.messages.length,
        4,
      );
      assert.equal((await suite.api.push([{ queue, payload: 'over' }])).status, 429, 'slow still has 4');
      assert.equal(
        (await suite.api.pop(queue, 'consumerGroup=slow&batch=2&autoAck=true')).body.messages.length,
        2,
      );
      assert.equal((await pushMany(queue, 2, 'more')).status, 201);
      assert.equal((await suite.api.push([{ queue, payload: 'over' }])).status, 429);
    });

    test('retention off (the default): a group created later with subscriptionMode=all reads every message', async () => {
      // Issue 10's reproduction: what Queen's client create() sends by default.
      const queue = await suite.queue('later-group');
      await suite.api.configure(queue, {
        retentionEnabled: false,
        completedRetentionSeconds: 0,
        retentionSeconds: 0,
      });
      await pushMany(queue, 10);
      const first = await suite.api.pop(queue, 'consumerGroup=A&batch=10&autoAck=true');
      assert.equal(first.body.messages.length, 10);
      await suite.broker.storage.housekeeping.applyRetention();
      const later = await suite.api.pop(queue, 'consumerGroup=B&subscriptionMode=all&batch=10&autoAck=true');
      assert.equal(later.status, 200);
      assert.equal(later.body.messages.length, 10);
      // A seek backwards of A replays them too.
      const seek = await suite.api.call(
        'POST',
        `/api/v1/consumer-groups/A/queues/${encodeURIComponent(queue)}/seek`,
        { timestamp: 0 },
      );
      assert.equal(seek.status, 200);
      assert.equal((await suite.api.pop(queue, 'consumerGroup=A&batch=10')).body.messages.length, 10);
    });

    test('retention options apply only with retentionEnabled=true', async () => {
      const queue = await suite.queue('not-enabled');
      await suite.api.configure(queue, { retentionSeconds: 1, completedRetentionSeconds: 1 });
      const pushed = await pushMany(queue, 2);
      await suite.api.pop(queue, 'batch=1&autoAck=true');
      await suite.clock.advance(PAST_ONE_SECOND);
      await suite.broker.storage.housekeeping.applyRetention();
      const partitionId = pushed.body[0].partition_id;
      assert.equal(await messageStatus(partitionId, 'm0'), 200, 'completed message kept');
      assert.equal(await messageStatus(partitionId, 'm1'), 200, 'pending message kept');
      // Enabled, with completedRetentionSeconds 0: completed messages are kept (Queen: both
      // retentionEnabled and a window above 0 are required).
      const zero = await suite.queue('enabled-zero');
      await suite.api.configure(zero, { retentionEnabled: true, completedRetentionSeconds: 0 });
      const zeroPushed = await pushMany(zero, 1);
      await suite.api.pop(zero, 'autoAck=true');
      await suite.broker.storage.housekeeping.applyRetention();
      assert.equal(await messageStatus(zeroPushed.body[0].partition_id, 'm0'), 200);
    });

    test('completedRetentionSeconds deletes messages every group resolved once older than the window', async () => {
      const queue = await suite.queue('completed');
      await suite.api.configure(queue, { retentionEnabled: true, completedRetentionSeconds: 1 });
      const pushed = await pushMany(queue, 3);
      const partitionId = pushed.body[0].partition_id;
      await suite.api.pop(queue, 'batch=2&autoAck=true');
      await suite.clock.advance(PAST_ONE_SECOND);
      assert.equal(await suite.broker.storage.housekeeping.applyRetention(), 2);
      assert.equal(await messageStatus(partitionId, 'm0'), 404);
      assert.equal(await messageStatus(partitionId, 'm1'), 404);
      assert.equal(await messageStatus(partitionId, 'm2'), 200, 'never consumed: kept');
      // Dedup lasts as long as the message is retained: the id is free again.
      assert.equal(
        (await suite.api.push([{ queue, payload: 'x', transactionId: 'm0' }])).body[0].status,
        'queued',
      );
    });

    test('retentionSeconds deletes messages older than the window, consumed or not', async () => {
      const queue = await suite.queue('expired');
      await suite.api.configure(queue, { retentionEnabled: true, retentionSeconds: 1 });
      await pushMany(queue, 3);
      await suite.api.pop(queue, 'batch=1&autoAck=true');
      await suite.clock.advance(PAST_ONE_SECOND);
      assert.equal(await suite.broker.storage.housekeeping.applyRetention(), 3);
      assert.equal((await suite.api.pop(queue, 'batch=10')).status, 204);
    });

    test('stats count what is left to resolve: evicted messages leave pending and group lag', async () => {
      const queue = await suite.queue('stats');
      await suite.api.configure(queue, { maxWaitTimeSeconds: 1 });
      assert.equal((await suite.api.pop(queue, 'consumerGroup=lagging')).status, 204);
      await pushMany(queue, 3);
      await suite.api.pop(queue, 'consumerGroup=lagging&batch=1&autoAck=true');
      const ungrouped = await suite.queue('stats-nogroup');
      await suite.api.configure(ungrouped, { maxWaitTimeSeconds: 1 });
      await pushMany(ungrouped, 2);
      // Queen's shapes: the queue detail's pending total, each group's totalLag in the group list.
      const statusOf = async (name: string) => {
        assert.equal((await suite.api.call('POST', '/api/v1/stats/refresh')).status, 200);
        const detail = await suite.api.call('GET', `/api/v1/status/queues/${encodeURIComponent(name)}`);
        const groups = (await suite.api.call('GET', '/api/v1/consumer-groups')).body.filter(
          (g: any) => g.queueName === name,
        );
        return { pending: detail.body.totals.pending, groups: groups.map((g: any) => [g.name, g.totalLag]) };
      };
      const before = await statusOf(queue);
      assert.equal(before.pending, 2);
      assert.deepEqual(before.groups, [['lagging', 2]]);
      assert.equal((await statusOf(ungrouped)).pending, 2);
      await suite.clock.advance(PAST_ONE_SECOND);
      assert.equal(await suite.broker.storage.housekeeping.applyRetention(), 4);
      const after = await statusOf(queue);
      assert.equal(after.pending, 0);
      assert.deepEqual(after.groups, [['lagging', 0]]);
      assert.equal((await statusOf(ungrouped)).pending, 0);
    });

    test('maxWaitTimeSeconds evicts (deletes) messages still waiting, without retentionEnabled', async () => {
      const queue = await suite.queue('evict');
      await suite.api.configure(queue, { maxWaitTimeSeconds: 1, maxSize: 3 });
      const pushed = await pushMany(queue, 3);
      const partitionId = pushed.body[0].partition_id;
      await suite.api.pop(queue, 'batch=1&autoAck=true');
      await suite.clock.advance(PAST_ONE_SECOND);
      assert.equal(await suite.broker.storage.housekeeping.applyRetention(), 2, 'the two waiting messages');
      assert.equal(await messageStatus(partitionId, 'm0'), 200, 'consumed: not waiting, kept');
      assert.equal(await messageStatus(partitionId, 'm1'), 404);
      assert.equal((await suite.api.pop(queue, 'batch=10')).status, 204);
      const dead = await suite.api.call('GET', `/api/v1/dlq?queue=${encodeURIComponent(queue)}`);
      assert.equal(dead.body.total, 0, 'evicted messages are deleted, not dead-lettered');
      // Evicted messages no longer count toward maxSize.
      assert.equal((await pushMany(queue, 3, 'new')).status, 201);
    });
  });
}

describe('maxSize counters of a queue stored by an earlier release (redis)', () => {
  let broker: Broker;
  let api: ReturnType<typeof client>;
  let redis: Redis;
  const prefix = uniquePrefix('backlog');
  before(async () => {
    broker = await startTestBroker('redis', { BROKER_KEY_PREFIX: prefix });
    api = client(broker.url);
    redis = new Redis(await testRedisUrl());
  });
  after(async () => {
    redis.disconnect();
    await broker.close();
  });

  test('the group backlog is counted once from the streams, then kept', async () => {
    const queue = queueName('backlog');
    await api.configure(queue, { maxSize: 3 });
    assert.equal((await api.pop(queue, 'consumerGroup=g')).status, 204);
    await api.push([1, 2, 3].map((n) => ({ queue, payload: n })));
    assert.equal((await api.pop(queue, 'consumerGroup=g&batch=1&autoAck=true')).body.messages.length, 1);
    // What an earlier release left: no counters (g has 2 unresolved of 3 retained).
    await redis.hdel(`${prefix}{${encodeURIComponent(queue)}}:stats`, 'backlog', 'pending:g');
    assert.equal((await api.push([4, 5].map((n) => ({ queue, payload: n })))).status, 429);
    assert.equal((await api.push([{ queue, payload: 4 }])).status, 201);
    assert.equal((await api.push([{ queue, payload: 5 }])).status, 429);
  });
});

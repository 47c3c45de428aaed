/*
 * The answers of Queen's resource, status and consumer-group routes, field by field, as Queen's
 * server builds them (`lib/schema/procedures/{007,008,013,014}_*.sql`) and its dashboard and
 * client read them (issue #10). docs/broker-queen.md, "Queen compatibility" and "Differences from Queen".
 */
import assert from 'node:assert/strict';
import { after, describe, test } from 'node:test';
import { stopTestRedis } from '@herald/testkit';
import { BACKENDS, clockedBrokerSuite } from './helpers.js';

after(() => stopTestRedis());

/** Just past one second: a message's age in whole seconds becomes at least 1. */
const PAST_ONE_SECOND = 1100;

for (const backend of BACKENDS) {
  describe(`Queen's answer shapes (${backend})`, () => {
    const suite = clockedBrokerSuite(backend);

    const ISO = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/;
    const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;
    const path = (template: string, queue: string) => template.replace('$q', encodeURIComponent(queue));

    /**
     * One queue `shapes.task.<unique>` with partitions p1 (3 messages) and p2 (1 message): a new
     * group `readers-<n>` consumed p1's first message, dead-lettered its second, and holds a
     * lease on p2's message.
     */
    async function scenario() {
      const queue = await suite.queue('shapes.task');
      const readers = `readers-${queue.split('.').at(-1)}`;
      await suite.api.configure(queue, { leaseTime: 60, retryLimit: 0, priority: 4, maxSize: 100 });
      const pushed = await suite.api.push([
        { queue, partition: 'p1', payload: 1, transactionId: 'a' },
        { queue, partition: 'p1', payload: 2, transactionId: 'b' },
        { queue, partition: 'p1', payload: 3, transactionId: 'c' },
        { queue, partition: 'p2', payload: 4, transactionId: 'd' },
      ]);
      const p1 = pushed.body[0].partition_id;
      const first = await suite.api.popPartition(queue, 'p1', `consumerGroup=${readers}&batch=2`);
      const [ok, failed] = first.body.messages;
      await suite.api.ack({ ...ok, consumerGroup: readers, status: 'completed' });
      await suite.api.ack({ ...failed, consumerGroup: readers, status: 'dlq', error: 'bad' });
      assert.equal((await suite.api.popPartition(queue, 'p2', `consumerGroup=${readers}`)).status, 200);
      assert.equal((await suite.api.call('POST', '/api/v1/stats/refresh')).status, 200);
      return { queue, p1, readers };
    }

    test("resources: queues, one queue, namespaces, tasks and overview in Queen's shapes", async () => {
      const { queue, p1 } = await scenario();
      const list = await suite.api.call('GET', '/api/v1/resources/queues');
      assert.deepEqual(Object.keys(list.body), ['queues']);
      const entry = list.body.queues.find((q: any) => q.name === queue);
      assert.match(entry.id, UUID);
      assert.match(entry.createdAt, ISO);
      assert.deepEqual(
        { ...entry, id: 'x', createdAt: 'x' },
        {
          id: 'x',
          name: queue,
          namespace: 'shapes',
          task: 'task',
          createdAt: 'x',
          partitions: 2,
          // Retained 4; p1's last message waits (pending), p2's is leased (processing).
          messages: { total: 4, pending: 1, processing: 1 },
        },
      );

      const one = await suite.api.call('GET', path('/api/v1/resources/queues/$q', queue));
      assert.equal(one.status, 200);
      assert.equal(one.body.id, entry.id);
      assert.deepEqual(Object.keys(one.body), [
        'id',
        'name',
        'namespace',
        'task',
        'createdAt',
        'partitions',
        'totals',
      ]);
      const [first, second] = one.body.partitions;
      assert.equal(first.id, p1);
      assert.equal(first.name, 'p1');
      assert.equal(first.createdAt, null);
      assert.deepEqual(first.stats, {
        total: 3,
        pending: 1,
        processing: 0,
        completed: 2,
        failed: 0,
        deadLetter: 1,
      });
      assert.match(first.oldestMessage, ISO);
      assert.match(first.newestMessage, ISO);
      assert.equal(second.name, 'p2');
      assert.deepEqual(second.stats, {
        total: 1,
        pending: 1,
        processing: 1,
        completed: 0,
        failed: 0,
        deadLetter: 0,
      });
      assert.deepEqual(one.body.totals, {
        total: 4,
        pending: 2,
        processing: 1,
        completed: 2,
        failed: 0,
        deadLetter: 1,
      });
      const missing = await suite.api.call('GET', '/api/v1/resources/queues/no-such-queue');
      assert.equal(missing.status, 404);
      assert.match(missing.body.error, /not found/);

      const namespaces = await suite.api.call('GET', '/api/v1/resources/namespaces');
      const shapes = namespaces.body.namespaces.find((n: any) => n.namespace === 'shapes');
      assert.deepEqual(Object.keys(shapes), ['namespace', 'queues', 'partitions', 'messages']);
      assert.ok(shapes.queues >= 1 && shapes.partitions >= 2);
      assert.deepEqual(Object.keys(shapes.messages), ['total', 'pending']);
      const tasks = await suite.api.call('GET', '/api/v1/resources/tasks');
      const task = tasks.body.tasks.find((t: any) => t.task === 'task');
      assert.deepEqual(Object.keys(task), ['task', 'queues', 'partitions', 'messages']);

      const overview = (await suite.api.call('GET', '/api/v1/resources/overview')).body;
      assert.deepEqual(Object.keys(overview), [
        'queues',
        'partitions',
        'namespaces',
        'tasks',
        'messages',
        'lag',
        'throughput',
        'timestamp',
        'statsAge',
      ]);
      for (const count of [overview.queues, overview.partitions, overview.namespaces, overview.tasks]) {
        assert.equal(typeof count, 'number');
      }
      assert.deepEqual(Object.keys(overview.messages), [
        'total',
        'pending',
        'processing',
        'completed',
        'failed',
        'deadLetter',
      ]);
      assert.deepEqual(Object.keys(overview.lag.time), ['avg', 'median', 'min', 'max']);
      assert.deepEqual(Object.keys(overview.lag.offset), ['avg', 'median', 'min', 'max']);
      assert.deepEqual(Object.keys(overview.throughput), ['ingestedPerSecond', 'processedPerSecond']);
      assert.match(overview.timestamp, ISO);
      assert.ok(Number.isInteger(overview.statsAge) && overview.statsAge >= 0);
    });

    test("status: system status, queue list, queue detail and analytics in Queen's shapes", async () => {
      const { queue, p1 } = await scenario();
      const status = (await suite.api.call('GET', `/api/v1/status?queue=${encodeURIComponent(queue)}`)).body;
      for (const key of [
        'timeRange',
        'bucketMinutes',
        'pointCount',
        'throughput',
        'queues',
        'messages',
        'leases',
        'deadLetterQueue',
        'workers',
        'errors',
        'statsAge',
      ]) {
        assert.ok(key in status, key);
      }
      assert.match(status.timeRange.from, ISO);
      assert.equal(status.bucketMinutes, 1);
      assert.ok(Array.isArray(status.throughput));
      assert.equal(status.queues.length, 1);
      assert.deepEqual(Object.keys(status.queues[0]), [
        'id',
        'name',
        'namespace',
        'task',
        'partitions',
        'totalConsumed',
      ]);
      assert.equal(status.queues[0].totalConsumed, 2);
      assert.deepEqual(Object.keys(status.messages), [
        'total',
        'pending',
        'processing',
        'completed',
        'failed',
        'deadLetter',
        'requests',
        'batchEfficiency',
      ]);
      assert.deepEqual(Object.keys(status.leases), [
        'active',
        'partitionsWithLeases',
        'totalBatchSize',
        'totalAcked',
      ]);
      assert.ok(status.leases.active >= 1 && status.leases.totalBatchSize >= 1);
      assert.deepEqual(Object.keys(status.deadLetterQueue), [
        'totalMessages',
        'affectedPartitions',
        'topErrors',
      ]);
      assert.equal(typeof status.parkedLongPolls, 'number');
      assert.equal((await suite.api.call('GET', '/api/v1/status?from=yesterday')).status, 400);

      const list = (await suite.api.call('GET', '/api/v1/status/queues?namespace=shapes&limit=500')).body;
      assert.deepEqual(list.pagination, { limit: 500, offset: 0 });
      const summary = list.queues.find((q: any) => q.name === queue);
      assert.deepEqual(summary.messages, { total: 4, pending: 2, processing: 1 });
      assert.ok(list.queues.every((q: any) => q.namespace === 'shapes'));
      assert.equal((await suite.api.call('GET', '/api/v1/status/queues?limit=0')).status, 400);

      const detail = await suite.api.call('GET', path('/api/v1/status/queues/$q', queue));
      assert.equal(detail.status, 200);
      assert.deepEqual(Object.keys(detail.body), ['queue', 'partitions', 'totals']);
      assert.deepEqual(
        { ...detail.body.queue, id: 'x', createdAt: 'x' },
        {
          id: 'x',
          name: queue,
          namespace: 'shapes',
          task: 'task',
          priority: 4,
          createdAt: 'x',
          config: {
            leaseTime: 60,
            retryLimit: 0,
            retryDelay: 0,
            ttl: 0,
            maxQueueSize: 100,
            deadLetterQueue: true,
            // Herald's bridge fields (docs/broker-outbox.md): off by default.
            bridgeTopic: '',
            bridgeOn: 'push',
            bridgePrivate: false,
          },
        },
      );
      const [first] = detail.body.partitions;
      assert.equal(first.id, p1);
      assert.deepEqual(first.messages, first.stats);
      assert.deepEqual(first.cursor, { totalConsumed: 2, batchesConsumed: 0 });
      assert.equal(first.lastActivity, null);
      const counts = { total: 4, pending: 2, processing: 1, completed: 2, failed: 0, deadLetter: 1 };
      assert.deepEqual(detail.body.totals, { messages: counts, ...counts });
      assert.equal((await suite.api.call('GET', '/api/v1/status/queues/no-such-queue')).status, 404);

      // Queen's maintenance file buffer: Herald has none (pushes in maintenance answer 503).
      const buffers = await suite.api.call('GET', '/api/v1/status/buffers');
      assert.equal(buffers.status, 200);
      assert.deepEqual(buffers.body, { pending: 0, failed: 0, dbHealthy: true, worker: 0 });

      const analytics = (await suite.api.call('GET', '/api/v1/status/analytics?interval=day')).body;
      assert.deepEqual(Object.keys(analytics), ['dataPoints', 'interval', 'from', 'to']);
      assert.equal(analytics.interval, 'day');
      assert.equal((await suite.api.call('GET', '/api/v1/status/analytics?interval=week')).status, 400);
    });

    test("consumer groups: the list, one group, lagging partitions, subscription and seek in Queen's shapes", async () => {
      const { queue, p1, readers } = await scenario();
      const list = await suite.api.call('GET', '/api/v1/consumer-groups');
      assert.ok(Array.isArray(list.body));
      const entry = list.body.find((g: any) => g.name === readers && g.queueName === queue);
      assert.ok(entry.maxTimeLag >= 0);
      assert.deepEqual(
        { ...entry, maxTimeLag: 0 },
        {
          name: readers,
          topics: [queue],
          queueName: queue,
          members: 2,
          partitionsWithLag: 2,
          totalLag: 2,
          maxTimeLag: 0,
          state: 'Stable',
          subscriptionMode: null,
          subscriptionTimestamp: null,
          subscriptionCreatedAt: null,
        },
      );

      const detail = await suite.api.call('GET', `/api/v1/consumer-groups/${readers}`);
      assert.equal(detail.status, 200);
      const partitions = detail.body[queue].partitions;
      assert.deepEqual(
        partitions.map((p: any) => ({ ...p, timeLagSeconds: 0 })),
        [
          {
            partition: 'p1',
            workerId: null,
            lastConsumedAt: null,
            totalConsumed: 2,
            offsetLag: 1,
            timeLagSeconds: 0,
            leaseActive: false,
          },
          {
            partition: 'p2',
            workerId: null,
            lastConsumedAt: null,
            totalConsumed: 0,
            offsetLag: 1,
            timeLagSeconds: 0,
            leaseActive: true,
          },
        ],
      );
      const nobody = await suite.api.call('GET', '/api/v1/consumer-groups/nobody-reads');
      assert.equal(nobody.status, 200);
      assert.deepEqual(nobody.body, {});

      const lagging = await suite.api.call('GET', '/api/v1/consumer-groups/lagging?minLagSeconds=-1');
      assert.equal(lagging.status, 400);
      // Queen lists a partition once its oldest unresolved message is more than minLagSeconds old.
      await suite.clock.advance(PAST_ONE_SECOND);
      const all = await suite.api.call('GET', '/api/v1/consumer-groups/lagging?minLagSeconds=0');
      assert.deepEqual(
        all.body
          .filter((r: any) => r.queue_name === queue)
          .map((r: any) => r.partition_name)
          .sort(),
        ['p1', 'p2'],
      );
      // Default threshold: one hour; nothing here is that old.
      const hour = await suite.api.call('GET', '/api/v1/consumer-groups/lagging');
      assert.ok(!hour.body.some((row: any) => row.queue_name === queue));
      for (const row of all.body.filter((r: any) => r.queue_name === queue)) {
        assert.deepEqual(Object.keys(row), [
          'consumer_group',
          'queue_name',
          'partition_name',
          'partition_id',
          'worker_id',
          'offset_lag',
          'time_lag_seconds',
          'lag_hours',
          'oldest_unconsumed_at',
          'last_consumed_at',
        ]);
        assert.equal(row.consumer_group, readers);
        assert.equal(row.offset_lag, 1);
        if (row.partition_name === 'p1') assert.equal(row.partition_id, p1);
      }

      const at = '2020-01-01T00:00:00.000Z';
      const subscribed = await suite.api.call('POST', `/api/v1/consumer-groups/${readers}/subscription`, {
        subscriptionTimestamp: at,
      });
      assert.equal(subscribed.status, 200);
      assert.deepEqual(subscribed.body, {
        success: true,
        consumerGroup: readers,
        newTimestamp: at,
        rowsUpdated: 1,
      });
      assert.equal(
        (await suite.api.call('POST', `/api/v1/consumer-groups/${readers}/subscription`, {})).status,
        400,
      );

      const seek = await suite.api.call(
        'POST',
        path(`/api/v1/consumer-groups/${readers}/queues/$q/seek`, queue),
        {
          toEnd: true,
        },
      );
      assert.deepEqual(seek.body, {
        success: true,
        consumerGroup: readers,
        queueName: queue,
        seekToEnd: true,
        targetTimestamp: null,
        partitionsUpdated: 2,
      });
      const noQueue = await suite.api.call(
        'POST',
        `/api/v1/consumer-groups/${readers}/queues/no-such-queue/seek`,
        {
          timestamp: at,
        },
      );
      assert.equal(noQueue.status, 200);
      assert.deepEqual(noQueue.body, {
        success: true,
        consumerGroup: readers,
        queueName: 'no-such-queue',
        seekToEnd: false,
        targetTimestamp: at,
        partitionsUpdated: 0,
      });
      // Queen's dashboard sends no body: to the end.
      const partitionSeek = await suite.api.call(
        'POST',
        path(`/api/v1/consumer-groups/${readers}/queues/$q/partitions/p1/seek`, queue),
      );
      assert.equal(partitionSeek.status, 200);
      assert.deepEqual(partitionSeek.body, {
        success: true,
        consumerGroup: readers,
        queueName: queue,
        partitionName: 'p1',
        updated: true,
        cursorMovedTo: null,
      });
    });

    test('every DELETE answers 200 with what it found, like Queen, also for what does not exist', async () => {
      const queue = await suite.queue('del');
      const pushed = await suite.api.push([{ queue, payload: 1, transactionId: 't1' }]);
      const partitionId = pushed.body[0].partition_id;
      await suite.api.pop(queue, 'consumerGroup=g1&autoAck=true');
      const at = (template: string) => path(template, queue);

      // queen.delete_message_v1
      const message = await suite.api.call('DELETE', `/api/v1/messages/${partitionId}/t1`);
      assert.equal(message.status, 200);
      assert.deepEqual(message.body, {
        success: true,
        partitionId,
        transactionId: 't1',
        message: 'Message deleted successfully',
      });
      const noMessage = await suite.api.call('DELETE', `/api/v1/messages/${partitionId}/t1`);
      assert.equal(noMessage.status, 200);
      assert.deepEqual(noMessage.body, {
        success: false,
        partitionId,
        transactionId: 't1',
        message: 'Message not found',
      });

      // queen.delete_consumer_group_for_queue_v1
      const groupOfQueue = await suite.api.call('DELETE', at('/api/v1/consumer-groups/g1/queues/$q'));
      assert.equal(groupOfQueue.status, 200);
      assert.deepEqual(groupOfQueue.body, {
        success: true,
        consumerGroup: 'g1',
        queueName: queue,
        deletedPartitions: 1,
        metadataDeleted: true,
      });
      const again = await suite.api.call(
        'DELETE',
        at('/api/v1/consumer-groups/g1/queues/$q?deleteMetadata=false'),
      );
      assert.equal(again.status, 200);
      assert.deepEqual(again.body, {
        success: true,
        consumerGroup: 'g1',
        queueName: queue,
        deletedPartitions: 0,
        // Herald keeps a group's subscription with its state: deleting one deletes both.
        metadataDeleted: true,
      });

      // queen.delete_consumer_group_v1
      await suite.api.pop(queue, 'consumerGroup=g2&autoAck=true');
      const group = await suite.api.call('DELETE', '/api/v1/consumer-groups/g2');
      assert.equal(group.status, 200);
      assert.deepEqual(group.body, {
        success: true,
        consumerGroup: 'g2',
        deletedPartitions: 1,
        metadataDeleted: true,
      });
      const noGroup = await suite.api.call('DELETE', '/api/v1/consumer-groups/never-existed');
      assert.equal(noGroup.status, 200);
      assert.deepEqual(noGroup.body, {
        success: true,
        consumerGroup: 'never-existed',
        deletedPartitions: 0,
        metadataDeleted: true,
      });

      // queen.delete_queue_v1
      const deleted = await suite.api.call('DELETE', at('/api/v1/resources/queues/$q'));
      assert.equal(deleted.status, 200);
      assert.deepEqual(deleted.body, { deleted: true, queue, existed: true });
      const gone = await suite.api.call('DELETE', at('/api/v1/resources/queues/$q'));
      assert.equal(gone.status, 200);
      assert.deepEqual(gone.body, { deleted: true, queue, existed: false });
    });
  });
}

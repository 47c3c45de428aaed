/*
 * The answers of Queen's resource, status and consumer-group routes, field by field, as Queen's
 * server builds them (`lib/schema/procedures/{007,008,013,014}_*.sql`) and its dashboard and
 * client read them (issue #10). docs/broker.md, "Queen compatibility" and "Differences from Queen".
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { stopTestRedis } from '@herald/testkit';
import type { Broker } from '../src/index.js';
import { BACKENDS, client, queueName, startTestBroker } from './helpers.js';

after(() => stopTestRedis());

for (const backend of BACKENDS) {
  describe(`Queen's answer shapes (${backend})`, () => {
    let broker: Broker;
    let api: ReturnType<typeof client>;
    before(async () => {
      broker = await startTestBroker(backend);
      api = client(broker.url);
    });
    after(() => broker.close());

    test('every DELETE answers 200 with what it found, like Queen, also for what does not exist', async () => {
      const queue = queueName('del');
      const pushed = await api.push([{ queue, payload: 1, transactionId: 't1' }]);
      const partitionId = pushed.body[0].partition_id;
      await api.pop(queue, 'consumerGroup=g1&autoAck=true');
      const path = (p: string) => p.replace('$q', encodeURIComponent(queue));

      // queen.delete_message_v1
      const message = await api.call('DELETE', `/api/v1/messages/${partitionId}/t1`);
      assert.equal(message.status, 200);
      assert.deepEqual(message.body, {
        success: true,
        partitionId,
        transactionId: 't1',
        message: 'Message deleted successfully',
      });
      const noMessage = await api.call('DELETE', `/api/v1/messages/${partitionId}/t1`);
      assert.equal(noMessage.status, 200);
      assert.deepEqual(noMessage.body, {
        success: false,
        partitionId,
        transactionId: 't1',
        message: 'Message not found',
      });

      // queen.delete_consumer_group_for_queue_v1
      const groupOfQueue = await api.call('DELETE', path('/api/v1/consumer-groups/g1/queues/$q'));
      assert.equal(groupOfQueue.status, 200);
      assert.deepEqual(groupOfQueue.body, {
        success: true,
        consumerGroup: 'g1',
        queueName: queue,
        deletedPartitions: 1,
        metadataDeleted: true,
      });
      const again = await api.call(
        'DELETE',
        path('/api/v1/consumer-groups/g1/queues/$q?deleteMetadata=false'),
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
      await api.pop(queue, 'consumerGroup=g2&autoAck=true');
      const group = await api.call('DELETE', '/api/v1/consumer-groups/g2');
      assert.equal(group.status, 200);
      assert.deepEqual(group.body, {
        success: true,
        consumerGroup: 'g2',
        deletedPartitions: 1,
        metadataDeleted: true,
      });
      const noGroup = await api.call('DELETE', '/api/v1/consumer-groups/never-existed');
      assert.equal(noGroup.status, 200);
      assert.deepEqual(noGroup.body, {
        success: true,
        consumerGroup: 'never-existed',
        deletedPartitions: 0,
        metadataDeleted: true,
      });

      // queen.delete_queue_v1
      const deleted = await api.call('DELETE', path('/api/v1/resources/queues/$q'));
      assert.equal(deleted.status, 200);
      assert.deepEqual(deleted.body, { deleted: true, queue, existed: true });
      const gone = await api.call('DELETE', path('/api/v1/resources/queues/$q'));
      assert.equal(gone.status, 200);
      assert.deepEqual(gone.body, { deleted: true, queue, existed: false });
    });
  });
}

/*
 * Consumer-group lag (issue #24): GET /api/v1/lag and the herald_consumer_group_lag_* gauges,
 * on a clock the test moves so the ages are exact.
 */
import assert from 'node:assert/strict';
import { after, describe, test } from 'node:test';
import { stopTestRedis } from '@herald/testkit';
import { BACKENDS, clockedBrokerSuite, queueName } from './helpers.js';

after(() => stopTestRedis());

/** The value of `metric{queue="…",group="…"}` in a /metrics text, undefined when absent. */
function sample(text: string, metric: string, queue: string, group: string): number | undefined {
  for (const line of text.split('\n')) {
    if (!line.startsWith(`${metric}{`)) continue;
    const labels = line.slice(line.indexOf('{') + 1, line.lastIndexOf('}'));
    if (labels.includes(`queue="${queue}"`) && labels.includes(`group="${group}"`)) {
      return Number(line.slice(line.lastIndexOf(' ') + 1));
    }
  }
  return undefined;
}

for (const backend of BACKENDS) {
  describe(`consumer-group lag (${backend})`, () => {
    const suite = clockedBrokerSuite(backend);
    const lag = (query: string) => suite.api.call('GET', `/api/v1/lag?${query}`);

    test('a group: its unresolved messages, the age of the oldest and its partitions, on the route and in /metrics', async () => {
      const queue = await suite.queue('lag');
      const items = [
        ...Array.from({ length: 5 }, (_, n) => ({ queue, partition: 'a', payload: n })),
        ...Array.from({ length: 3 }, (_, n) => ({ queue, partition: 'b', payload: n })),
      ];
      assert.equal((await suite.api.push(items)).status, 201);
      const popped = await suite.api.popPartition(queue, 'a', 'consumerGroup=workers&batch=5');
      for (const message of popped.body.messages) {
        const acked = await suite.api.ack({
          transactionId: message.transactionId,
          partitionId: message.partitionId,
          leaseId: message.leaseId,
          consumerGroup: 'workers',
        });
        assert.equal(acked.body[0].success, true);
      }
      await suite.clock.advance(5000);
      assert.equal((await suite.api.call('POST', '/api/v1/stats/refresh')).status, 200);

      const reply = await lag(`queue=${queue}&group=workers`);
      assert.equal(reply.status, 200);
      assert.deepEqual(reply.body, { queue, group: 'workers', messages: 3, oldestSeconds: 5, partitions: 1 });

      const metrics = await (await fetch(`${suite.broker.url}/metrics`)).text();
      assert.equal(sample(metrics, 'herald_consumer_group_lag_messages', queue, 'workers'), 3);
      assert.equal(sample(metrics, 'herald_consumer_group_lag_seconds', queue, 'workers'), 5);
    });

    test('queue mode before its first pop counts every message (the live view, before a stats run)', async () => {
      const queue = await suite.queue('fresh');
      await suite.api.push([
        { queue, partition: 'x', payload: 1 },
        { queue, partition: 'y', payload: 2 },
      ]);
      await suite.clock.advance(2000);
      const reply = await lag(`queue=${queue}`);
      assert.equal(reply.status, 200);
      assert.deepEqual(reply.body, {
        queue,
        group: '__QUEUE_MODE__',
        messages: 2,
        oldestSeconds: 2,
        partitions: 2,
      });
    });

    test('a queue or a group that does not exist is a 404, not 0; the queue name is required', async () => {
      const queue = await suite.queue('known');
      await suite.api.push([{ queue, payload: 1 }]);
      const unknownQueue = await lag(`queue=${queueName('nowhere')}`);
      assert.equal(unknownQueue.status, 404);
      assert.match(unknownQueue.body.error, /Queue '.*' not found/);
      const unknownGroup = await lag(`queue=${queue}&group=nobody`);
      assert.equal(unknownGroup.status, 404);
      assert.match(unknownGroup.body.error, /Consumer group 'nobody' not found/);
      assert.equal((await lag('')).status, 400);
    });
  });
}

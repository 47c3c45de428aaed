/*
 * Queen's own client against Herald (issue #10): the wire behaviours where Herald deviated from
 * Queen's server, over HTTP, on both backends. docs/broker-queen.md, "Queen compatibility".
 */
import assert from 'node:assert/strict';
import { after, describe, test } from 'node:test';
import { stopTestRedis } from '@herald/testkit';
import { BACKENDS, brokerSuite, queueName } from './helpers.js';

after(() => stopTestRedis());

for (const backend of BACKENDS) {
  describe(`Queen compatibility (${backend})`, () => {
    const suite = brokerSuite(backend);

    test('pop with an unknown subscriptionMode reads from the beginning, like all', async () => {
      // Queen's parse_subscription_mode: new/new-only → new, anything else → all. Queen's JS
      // client sends `from_beginning`.
      const queue = queueName();
      await suite.api.push([{ queue, payload: 1 }]);
      for (const mode of ['from_beginning', 'weird', 'ALL', '']) {
        const group = `g-${mode || 'empty'}`;
        const reply = await suite.api.pop(queue, `consumerGroup=${group}&subscriptionMode=${mode}&batch=10`);
        assert.equal(reply.status, 200, mode);
        assert.deepEqual(
          reply.body.messages.map((m: any) => m.data),
          [1],
          mode,
        );
      }
      for (const mode of ['new', 'new-only']) {
        const reply = await suite.api.pop(queue, `consumerGroup=g-${mode}&subscriptionMode=${mode}&batch=10`);
        assert.equal(reply.status, 204, mode);
      }
      // subscriptionFrom wins over the mode, as in Queen: `now` is new, a time is a time.
      const now = await suite.api.pop(queue, 'consumerGroup=g-now&subscriptionMode=all&subscriptionFrom=now');
      assert.equal(now.status, 204);
      const epoch = await suite.api.pop(
        queue,
        `consumerGroup=g-epoch&subscriptionMode=new&subscriptionFrom=${new Date(0).toISOString()}`,
      );
      assert.equal(epoch.status, 200);
    });

    test('a 2.17 MB payload is accepted and delivered whole (no per-payload limit below the body limit)', async () => {
      const queue = queueName();
      const payload = { blob: 'x'.repeat(2_170_000) };
      const pushed = await suite.api.push([{ queue, payload }]);
      assert.equal(pushed.status, 201);
      assert.equal(pushed.body[0].status, 'queued');
      const popped = await suite.api.pop(queue);
      assert.equal(popped.status, 200);
      assert.equal(popped.body.messages[0].data.blob.length, 2_170_000);
    });

    test('configure with an empty queue name answers 200 with the effective options and creates no queue', async () => {
      const reply = await suite.api.call('POST', '/api/v1/configure', {
        queue: '',
        options: { leaseTime: 30, retryLimit: 5 },
      });
      assert.equal(reply.status, 200);
      assert.equal(reply.body.configured, true);
      assert.equal(reply.body.queue, '');
      assert.equal(reply.body.options.leaseTime, 30);
      assert.equal(reply.body.options.retryLimit, 5);
      assert.equal(typeof reply.body.options.retryDelay, 'number');
      const queues = await suite.api.call('GET', '/api/v1/resources/queues');
      assert.ok(!queues.body.queues.some((q: any) => q.name === ''));
      // Nothing can be stored under an empty name, so no message is governed by what was sent.
      const push = await suite.api.push([{ queue: '', payload: 1 }]);
      assert.equal(push.status, 400);
      // Still validated: a bad option or a non-string name is a 400, as for any queue.
      const bad = await suite.api.call('POST', '/api/v1/configure', {
        queue: '',
        options: { leaseTime: -1 },
      });
      assert.equal(bad.status, 400);
      assert.equal((await suite.api.call('POST', '/api/v1/configure', { queue: 5 })).status, 400);
    });

    test('GET /api/v1/pop by namespace and task serves the matching queues, per consumer group', async () => {
      const namespace = queueName('ns').replaceAll('.', '-');
      const billing = `${namespace}-billing`;
      const shipping = `${namespace}-shipping`;
      for (const [queue, task] of [
        [billing, 'invoice'],
        [shipping, 'label'],
      ] as const) {
        const configured = await suite.api.call('POST', '/api/v1/configure', { queue, namespace, task });
        assert.equal(configured.status, 200);
      }
      await suite.api.push([
        { queue: billing, payload: 'b1' },
        { queue: shipping, payload: 's1' },
      ]);
      const byTask = await suite.api.call('GET', `/api/v1/pop?namespace=${namespace}&task=label&batch=10`);
      assert.equal(byTask.status, 200);
      assert.deepEqual(
        byTask.body.messages.map((m: any) => [m.queue, m.data]),
        [[shipping, 's1']],
      );
      assert.equal(
        (await suite.api.call('GET', `/api/v1/pop?namespace=${namespace}&task=label&batch=10`)).status,
        204,
      );
      // A namespace alone matches both queues; queue mode takes what is left (billing's).
      const byNamespace = await suite.api.call('GET', `/api/v1/pop?namespace=${namespace}&batch=10`);
      assert.deepEqual(
        byNamespace.body.messages.map((m: any) => m.data),
        ['b1'],
      );
      // A consumer group reads every matching queue from the beginning, queue by queue.
      const seen: unknown[] = [];
      for (let round = 0; round < 2; round++) {
        const reply = await suite.api.call(
          'GET',
          `/api/v1/pop?namespace=${namespace}&consumerGroup=audit&autoAck=true&batch=10`,
        );
        assert.equal(reply.status, 200);
        assert.equal(reply.body.consumerGroup, 'audit');
        seen.push(...reply.body.messages.map((m: any) => m.data));
      }
      assert.deepEqual(seen.sort(), ['b1', 's1']);
      assert.equal(
        (await suite.api.call('GET', `/api/v1/pop?namespace=${namespace}&consumerGroup=audit`)).status,
        204,
      );
      assert.equal((await suite.api.call('GET', `/api/v1/pop?namespace=${namespace}-none`)).status, 204);
      assert.equal((await suite.api.call('GET', `/api/v1/pop?namespace=${namespace}&batch=0`)).status, 400);
    });

    test('a long-polling pop by namespace wakes on a push to any matching queue', async () => {
      const namespace = queueName('wait').replaceAll('.', '-');
      const queues = [`${namespace}.a`, `${namespace}.b`];
      for (const queue of queues) await suite.api.call('POST', '/api/v1/configure', { queue });
      let answered = false;
      const parked = suite.api
        .call('GET', `/api/v1/pop?namespace=${namespace}&wait=true&timeout=20000`)
        .finally(() => {
          answered = true;
        });
      // Parked before the push: the status counts parked long-polls. A pop that answers without
      // parking ends the loop (and fails below).
      while (!answered && (await suite.api.call('GET', '/api/v1/status')).body.parkedLongPolls === 0) {
        await new Promise((resolve) => setImmediate(resolve));
      }
      await suite.api.push([{ queue: queues[1], payload: 'late' }]);
      const reply = await parked;
      assert.equal(reply.status, 200);
      assert.deepEqual(
        reply.body.messages.map((m: any) => [m.queue, m.data]),
        [[queues[1], 'late']],
      );
    });

    test('GET /api/v1/status/queues/:queue/messages lists messages newest first with their queue-mode state', async () => {
      const queue = queueName();
      await suite.api.push([
        { queue, partition: 'p1', payload: 1, transactionId: 'done' },
        { queue, partition: 'p1', payload: 2, transactionId: 'leased' },
        { queue, partition: 'p1', payload: 3, transactionId: 'waiting' },
      ]);
      await suite.api.push([{ queue, partition: 'p2', payload: 4, transactionId: 'dead' }]);
      const first = await suite.api.popPartition(queue, 'p1', 'batch=2');
      const [done] = first.body.messages;
      await suite.api.ack({ transactionId: 'done', partitionId: done.partitionId, leaseId: done.leaseId });
      const second = await suite.api.popPartition(queue, 'p2');
      const [dead] = second.body.messages;
      const dlq = await suite.api.ack({
        transactionId: 'dead',
        partitionId: dead.partitionId,
        leaseId: dead.leaseId,
        status: 'dlq',
      });
      assert.equal(dlq.body[0].dlq, true);
      const path = `/api/v1/status/queues/${encodeURIComponent(queue)}/messages`;
      const reply = await suite.api.call('GET', path);
      assert.equal(reply.status, 200);
      assert.ok(Array.isArray(reply.body));
      assert.deepEqual(Object.fromEntries(reply.body.map((m: any) => [m.transactionId, m.status])), {
        done: 'completed',
        leased: 'processing',
        waiting: 'pending',
        dead: 'dead_letter',
      });
      const row = reply.body.find((m: any) => m.transactionId === 'waiting');
      assert.deepEqual(Object.keys(row).sort(), [
        'createdAt',
        'id',
        'partition',
        'partitionId',
        'queue',
        'queuePath',
        'status',
        'transactionId',
      ]);
      assert.equal(row.queuePath, `${queue}/p1`);
      assert.equal(row.partitionId, done.partitionId);
      const times = reply.body.map((m: any) => Date.parse(m.createdAt));
      assert.deepEqual(
        times,
        [...times].sort((a, b) => b - a),
      );
      const page = await suite.api.call('GET', `${path}?limit=2&offset=1`);
      assert.deepEqual(
        page.body.map((m: any) => m.transactionId),
        reply.body.slice(1, 3).map((m: any) => m.transactionId),
      );
      assert.equal((await suite.api.call('GET', `${path}?limit=0`)).status, 400);
      assert.equal((await suite.api.call('GET', `${path}?limit=1001`)).status, 400);
      assert.equal((await suite.api.call('GET', '/api/v1/status/queues/no-such-queue/messages')).status, 404);
    });

    test('maintenance mode refuses every push with 503 and stores nothing; acks, pops and state-only cycles run', async () => {
      // docs/broker-queen.md "Queen compatibility": Queen buffers such pushes to a node-local file.
      const queue = queueName('maint');
      await suite.api.push([{ queue, payload: 'before', transactionId: 'before' }]);
      const popped = await suite.api.pop(queue);
      const registered = await suite.api.call('POST', '/streams/v1/queries', {
        name: queueName('maint-query'),
        source_queue: queue,
        config_hash: 'h',
      });
      assert.equal(
        (await suite.api.call('POST', '/api/v1/system/maintenance', { enabled: true })).status,
        200,
      );
      try {
        const refused = { error: 'Broker is in maintenance mode: pushes are refused' };
        const push = await suite.api.push([{ queue, payload: 'during', transactionId: 'during' }]);
        assert.deepEqual([push.status, push.body], [503, refused]);
        const transaction = await suite.api.call('POST', '/api/v1/transaction', {
          operations: [{ type: 'push', items: [{ queue, payload: 'during', transactionId: 'txn' }] }],
        });
        assert.deepEqual([transaction.status, transaction.body], [503, refused]);
        const cycle = await suite.api.call('POST', '/streams/v1/cycle', {
          query_id: registered.body.query_id,
          partition_id: 'p',
          push_items: [{ queue, payload: 'during', transactionId: 'cycle' }],
        });
        assert.deepEqual([cycle.status, cycle.body], [503, refused]);
        const stateOnly = await suite.api.call('POST', '/streams/v1/cycle', {
          query_id: registered.body.query_id,
          partition_id: 'p',
          state_ops: [{ type: 'upsert', key: 'k', value: 1 }],
        });
        assert.equal(stateOnly.body.success, true);
        const acked = await suite.api.ack({ ...popped.body.messages[0], status: 'completed' });
        assert.equal(acked.body[0].success, true);
        const status = await suite.api.call('GET', '/api/v1/system/maintenance');
        assert.deepEqual(status.body, {
          maintenanceMode: true,
          popMaintenanceMode: false,
          bufferedMessages: 0,
        });
      } finally {
        await suite.api.call('POST', '/api/v1/system/maintenance', { enabled: false });
      }
      // Nothing was buffered: after maintenance only what is pushed again arrives.
      assert.equal((await suite.api.pop(queue)).status, 204);
    });
  });

  describe(`configurable payload and body limits (${backend})`, () => {
    const suite = brokerSuite(backend, {
      BROKER_MAX_PAYLOAD_BYTES: '1000',
      BROKER_BODY_LIMIT_BYTES: '100000',
    });

    test('a payload over BROKER_MAX_PAYLOAD_BYTES is a 400 naming the limit, at the limit it is stored', async () => {
      const queue = queueName();
      // JSON.stringify('x'.repeat(998)) is 1000 bytes.
      assert.equal((await suite.api.push([{ queue, payload: 'x'.repeat(998) }])).status, 201);
      const over = await suite.api.push([{ queue, payload: 'x'.repeat(999) }]);
      assert.equal(over.status, 400);
      assert.match(over.body.error, /items\[0\]\.payload exceeds 1000 bytes/);
      const inTransaction = await suite.api.call('POST', '/api/v1/transaction', {
        operations: [{ type: 'push', items: [{ queue, payload: 'x'.repeat(999) }] }],
      });
      assert.equal(inTransaction.status, 400);
      assert.match(inTransaction.body.error, /exceeds 1000 bytes/);
    });

    test('a body over BROKER_BODY_LIMIT_BYTES is a 413', async () => {
      const reply = await suite.api.call(
        'POST',
        '/api/v1/push',
        `{"items":[],"pad":"${'x'.repeat(100_000)}"}`,
      );
      assert.equal(reply.status, 413);
      assert.equal(typeof reply.body.error, 'string');
    });
  });
}

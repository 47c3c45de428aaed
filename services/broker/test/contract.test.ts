/*
 * The contract suite: every data-plane route and semantic rule of docs/broker-api.md, over HTTP,
 * against both backends (in-process and Redis; HERALD_TEST_TOPOLOGY puts Redis on a Sentinel set or
 * a Redis Cluster, see helpers.ts).
 * Over 500 lines on purpose: one suite per backend, one test per rule of docs/broker-api.md in the spec's
 * order, so a rule and its check are found together; the shared setup is in helpers.ts.
 */
import assert from 'node:assert/strict';
import { after, describe, test } from 'node:test';
import { stopTestRedis, waitFor } from '@herald/testkit';
import { BACKENDS, brokerSuite, clockedBrokerSuite, queueName } from './helpers.js';

after(() => stopTestRedis());

for (const backend of BACKENDS) {
  describe(`broker contract (${backend})`, () => {
    const suite = brokerSuite(backend);

    test('push answers 201 in input order; duplicates keep the first message id', async () => {
      const queue = queueName();
      const reply = await suite.api.push([
        { queue, payload: { n: 1 }, transactionId: 'a' },
        { queue, partition: 'p', payload: { n: 2 }, transactionId: 'b', traceId: 'trace-1' },
        { queue, payload: { n: 3 }, transactionId: 'a' },
      ]);
      assert.equal(reply.status, 201);
      assert.deepEqual(
        reply.body.map((r: any) => [r.index, r.transaction_id, r.status]),
        [
          [0, 'a', 'queued'],
          [1, 'b', 'queued'],
          [2, 'a', 'duplicate'],
        ],
      );
      assert.equal(reply.body[2].message_id, reply.body[0].message_id);
      assert.equal(reply.body[1].trace_id, 'trace-1');
      assert.equal(reply.body[0].queueName, queue);
      assert.match(reply.body[0].message_id, /^[0-9a-f]{8}-[0-9a-f]{4}-7/);
      const again = await suite.api.push([{ queue, payload: {}, transactionId: 'b', partition: 'p' }]);
      assert.equal(again.body[0].status, 'duplicate');
      assert.equal(again.body[0].message_id, reply.body[1].message_id);
    });

    test('push validates input and bounds', async () => {
      assert.deepEqual((await suite.api.call('POST', '/api/v1/push', { items: [] })).body, []);
      assert.equal((await suite.api.call('POST', '/api/v1/push', { items: [] })).status, 201);
      for (const body of [
        {},
        { items: 'x' },
        { items: [{}] },
        { items: [{ queue: 1 }] },
        { items: [{ queue: 'q', partition: 5 }] },
      ]) {
        const reply = await suite.api.call('POST', '/api/v1/push', body);
        assert.equal(reply.status, 400, JSON.stringify(body));
        assert.equal(typeof reply.body.error, 'string');
      }
      const malformed = await suite.api.call('POST', '/api/v1/push', '{"items": [');
      assert.equal(malformed.status, 400);
      assert.match(malformed.body.error, /Invalid JSON/);
    });

    test('OPTIONS answers 204 and JSON responses carry CORS headers', async () => {
      const options = await fetch(`${suite.broker.url}/api/v1/push`, { method: 'OPTIONS' });
      assert.equal(options.status, 204);
      const reply = await suite.api.call('GET', '/api/v1/resources/queues');
      assert.equal(reply.headers.get('access-control-allow-origin'), '*');
      const missing = await suite.api.call('GET', '/api/v1/nothing-here');
      assert.equal(missing.status, 404);
      assert.equal(typeof missing.body.error, 'string');
    });

    test('pop delivers FIFO per partition in batches, 204 when empty, with the documented shape', async () => {
      const queue = queueName();
      await suite.api.push([1, 2, 3, 4, 5].map((n) => ({ queue, payload: { n }, transactionId: `t${n}` })));
      const first = await suite.api.pop(queue, 'batch=3');
      assert.equal(first.status, 200);
      const body = first.body;
      assert.equal(body.success, true);
      assert.equal(body.queue, queue);
      assert.equal(body.partition, 'Default');
      assert.equal(body.consumerGroup, '__QUEUE_MODE__');
      assert.equal(body.partitionsClaimed, 1);
      assert.deepEqual(
        body.messages.map((m: any) => m.data.n),
        [1, 2, 3],
      );
      for (const message of body.messages) {
        assert.equal(message.leaseId, body.leaseId);
        assert.equal(message.partitionId, body.partitionId);
        assert.equal(message.retryCount, 0);
        assert.equal(message.producerSub, null);
        assert.ok(Date.parse(message.createdAt) > 0);
      }
      // The partition is leased: nothing else to give.
      assert.equal((await suite.api.pop(queue, 'batch=3')).status, 204);
      const acks = await suite.api.ackBatch({
        acknowledgments: body.messages.map((m: any) => ({
          transactionId: m.transactionId,
          partitionId: m.partitionId,
          leaseId: m.leaseId,
          status: 'completed',
        })),
      });
      assert.equal(acks.status, 200);
      assert.deepEqual(
        acks.body.map((r: any) => r.success),
        [true, true, true],
      );
      assert.equal(acks.body[2].leaseReleased, true);
      assert.equal(acks.body[0].queueName, queue);
      assert.equal(acks.body[0].partitionName, 'Default');
      const second = await suite.api.pop(queue, 'batch=10');
      assert.deepEqual(
        second.body.messages.map((m: any) => m.data.n),
        [4, 5],
      );
      assert.equal((await suite.api.pop(queueName('never'))).status, 204);
    });

    test('pop by partition, and multi-partition pop with a global batch cap', async () => {
      const queue = queueName();
      await suite.api.push(
        ['a', 'b', 'c'].flatMap((p) => [1, 2].map((n) => ({ queue, partition: p, payload: { p, n } }))),
      );
      const only = await suite.api.popPartition(queue, 'b', 'batch=5');
      assert.equal(only.body.partition, 'b');
      assert.deepEqual(
        only.body.messages.map((m: any) => m.data.n),
        [1, 2],
      );
      assert.equal((await suite.api.popPartition(queue, 'b')).status, 204);
      assert.equal((await suite.api.popPartition(queue, 'nope')).status, 204);
      const multi = await suite.api.pop(queue, 'batch=3&partitions=5');
      assert.equal(multi.status, 200);
      assert.equal(multi.body.messages.length, 3);
      assert.equal(multi.body.partitionsClaimed, 2);
      const byPartition = new Map<string, number[]>();
      for (const m of multi.body.messages)
        byPartition.set(m.partition, [...(byPartition.get(m.partition) ?? []), m.data.n]);
      for (const values of byPartition.values()) assert.deepEqual(values, [...values].sort());
    });

    test('pop validates its query', async () => {
      for (const query of ['batch=0', 'batch=abc', 'wait=maybe', 'timeout=-1', 'subscriptionFrom=notatime']) {
        const reply = await suite.api.pop('q', query);
        assert.equal(reply.status, 400, query);
      }
    });

    test('a stale or unknown lease is refused; acking twice is a repeat, a conflicting second answer is refused', async () => {
      const queue = queueName();
      await suite.api.push([{ queue, payload: 1, transactionId: 'x' }]);
      const popped = (await suite.api.pop(queue)).body.messages[0];
      const wrong = await suite.api.ack({
        transactionId: 'x',
        partitionId: popped.partitionId,
        leaseId: 'not-the-lease',
      });
      assert.equal(wrong.status, 200);
      assert.equal(wrong.body[0].success, false);
      assert.equal(wrong.body[0].error, 'Invalid or expired lease');
      const right = await suite.api.ack({
        transactionId: 'x',
        partitionId: popped.partitionId,
        leaseId: popped.leaseId,
      });
      assert.equal(right.body[0].success, true);
      assert.equal(right.body[0].repeat, false);
      const twice = await suite.api.ack({ transactionId: 'x', partitionId: popped.partitionId });
      assert.deepEqual([twice.body[0].success, twice.body[0].repeat], [true, true]);
      const conflicting = await suite.api.ack({
        transactionId: 'x',
        partitionId: popped.partitionId,
        leaseId: popped.leaseId,
        status: 'failed',
      });
      assert.deepEqual(
        [conflicting.body[0].success, conflicting.body[0].error],
        [false, 'Message already acknowledged'],
      );
      const unknown = await suite.api.ack({
        transactionId: 'x',
        partitionId: '00000000-0000-0000-0000-000000000000',
      });
      assert.equal(unknown.body[0].error, 'Message not found');
      assert.equal((await suite.api.ack({ partitionId: 'p' })).status, 400);
      assert.equal((await suite.api.ack({ transactionId: 'x' })).status, 400);
      assert.equal(
        (await suite.api.ack({ transactionId: 'x', partitionId: 'p', status: 'weird' })).status,
        400,
      );
      assert.equal((await suite.api.ackBatch({})).status, 400);
    });

    test('a failed ack redelivers with retryCount, then dead-letters after retryLimit; DLQ lists and requeues', async () => {
      const queue = queueName();
      await suite.api.configure(queue, { retryLimit: 1 });
      await suite.api.push([
        { queue, payload: { v: 1 }, transactionId: 'm1' },
        { queue, payload: { v: 2 }, transactionId: 'm2' },
      ]);
      let popped = (await suite.api.pop(queue)).body.messages[0];
      assert.equal(popped.retryCount, 0);
      const failed = await suite.api.ack({
        transactionId: 'm1',
        partitionId: popped.partitionId,
        leaseId: popped.leaseId,
        status: 'failed',
        error: 'boom',
      });
      assert.equal(failed.body[0].success, true);
      assert.equal(failed.body[0].dlq, false);
      popped = (await suite.api.pop(queue)).body.messages[0];
      assert.equal(popped.transactionId, 'm1', 'order kept: the failed message comes first again');
      assert.equal(popped.retryCount, 1);
      const dead = await suite.api.ack({
        transactionId: 'm1',
        partitionId: popped.partitionId,
        leaseId: popped.leaseId,
        status: 'failed',
        error: 'boom again',
      });
      assert.equal(dead.body[0].dlq, true);
      const next = (await suite.api.pop(queue)).body.messages[0];
      assert.equal(next.transactionId, 'm2');
      const dlq = await suite.api.call('GET', `/api/v1/dlq?queue=${encodeURIComponent(queue)}`);
      assert.equal(dlq.status, 200);
      assert.equal(dlq.body.total, 1);
      assert.equal(dlq.body.messages[0].transactionId, 'm1');
      assert.equal(dlq.body.messages[0].errorMessage, 'boom again');
      assert.deepEqual(dlq.body.messages[0].data, { v: 1 });
      const requeued = await suite.api.call('POST', '/api/v1/dlq/requeue', {
        queue,
        dlqIds: [dlq.body.messages[0].dlqId],
      });
      assert.equal(requeued.body.requeued, 1);
      assert.equal(
        (await suite.api.call('GET', `/api/v1/dlq?queue=${encodeURIComponent(queue)}`)).body.total,
        0,
      );
      await suite.api.ack({ transactionId: 'm2', partitionId: next.partitionId, leaseId: next.leaseId });
      const again = (await suite.api.pop(queue)).body.messages[0];
      assert.equal(again.transactionId, 'm1');
    });

    test('consumer groups each receive every message; subscription modes; seek', async () => {
      const queue = queueName();
      await suite.api.push([
        { queue, payload: 1 },
        { queue, payload: 2 },
      ]);
      for (const group of ['g1', 'g2']) {
        const reply = await suite.api.pop(queue, `consumerGroup=${group}&batch=10&autoAck=true`);
        assert.deepEqual(
          reply.body.messages.map((m: any) => m.data),
          [1, 2],
        );
        assert.equal(reply.body.consumerGroup, group);
      }
      const fresh = await suite.api.pop(queue, 'consumerGroup=late&subscriptionMode=new&batch=10');
      assert.equal(fresh.status, 204);
      await suite.api.push([{ queue, payload: 3 }]);
      const late = await suite.api.pop(queue, 'consumerGroup=late&batch=10&autoAck=true');
      assert.deepEqual(
        late.body.messages.map((m: any) => m.data),
        [3],
      );
      const seek = await suite.api.call(
        'POST',
        `/api/v1/consumer-groups/g1/queues/${encodeURIComponent(queue)}/seek`,
        { timestamp: new Date(0).toISOString() },
      );
      assert.equal(seek.status, 200);
      const replay = await suite.api.pop(queue, 'consumerGroup=g1&batch=10&autoAck=true');
      assert.deepEqual(
        replay.body.messages.map((m: any) => m.data),
        [1, 2, 3],
      );
      await suite.api.call('POST', `/api/v1/consumer-groups/g2/queues/${encodeURIComponent(queue)}/seek`, {
        toEnd: true,
      });
      assert.equal((await suite.api.pop(queue, 'consumerGroup=g2')).status, 204);
      const from = await suite.api.pop(
        queue,
        `consumerGroup=fromnow&subscriptionFrom=${new Date(Date.now() + 60_000).toISOString()}`,
      );
      assert.equal(from.status, 204);
      assert.equal(
        (
          await suite.api.call(
            'POST',
            `/api/v1/consumer-groups/g1/queues/${encodeURIComponent(queue)}/seek`,
            {},
          )
        ).status,
        400,
      );
    });

    test('autoAck acknowledges on delivery', async () => {
      const queue = queueName();
      await suite.api.push([
        { queue, payload: 1 },
        { queue, payload: 2 },
      ]);
      const first = await suite.api.pop(queue, 'autoAck=true');
      assert.equal(first.body.messages[0].data, 1);
      const second = await suite.api.pop(queue, 'autoAck=true');
      assert.equal(second.body.messages[0].data, 2);
      assert.equal((await suite.api.pop(queue)).status, 204);
    });

    test('a batch ack is applied in order: repeats, retries and the release per item', async () => {
      const queue = queueName('batchack');
      await suite.api.push(
        ['a', 'b', 'c'].map((transactionId) => ({ queue, payload: transactionId, transactionId })),
      );
      const popped = await suite.api.pop(queue, 'batch=3');
      const { leaseId, partitionId } = popped.body;
      const item = (transactionId: string, status = 'completed') => ({
        transactionId,
        partitionId,
        leaseId,
        status,
      });
      const acks = await suite.api.ackBatch({
        acknowledgments: [
          item('b'),
          item('b'),
          item('a', 'failed'),
          item('c'),
          item('c'),
          { transactionId: 'nope', partitionId },
        ],
      });
      assert.deepEqual(
        acks.body.map((r: any) => [r.success, r.error, r.leaseReleased, r.repeat]),
        [
          [true, null, false, false],
          [true, null, false, true],
          [true, null, false, false],
          [true, null, true, false],
          // After the release: the answer recorded under the lease still makes it a repeat.
          [true, null, false, true],
          [false, 'Message not found', false, false],
        ],
      );
      const again = await suite.api.pop(queue, 'batch=3');
      assert.deepEqual(
        again.body.messages.map((m: any) => [m.transactionId, m.retryCount]),
        [['a', 1]],
      );
      const last = await suite.api.ackBatch({
        acknowledgments: [{ ...item('a'), leaseId: again.body.leaseId }],
      });
      assert.equal(last.body[0].leaseReleased, true);
      assert.equal((await suite.api.pop(queue)).status, 204);
    });

    test('a parked long-poll wakes on a push', async () => {
      const queue = queueName();
      const waiting = suite.api.pop(queue, 'wait=true&timeout=20000');
      await waitParked(1);
      await suite.api.push([{ queue, payload: 'wake' }]);
      const reply = await waiting;
      assert.equal(reply.status, 200);
      assert.equal(reply.body.messages[0].data, 'wake');
      const timedOut = await suite.api.pop(queueName('empty'), 'wait=true&timeout=50');
      assert.equal(timedOut.status, 204);
    });

    async function waitParked(count: number): Promise<void> {
      const { waitFor } = await import('@herald/testkit');
      await waitFor(
        async () => (await suite.api.call('GET', '/api/v1/status')).body.parkedLongPolls === count,
        {
          what: `${count} parked pops`,
        },
      );
    }

    test('a pop whose client disconnects leases nothing', async () => {
      const queue = queueName();
      const controller = new AbortController();
      const waiting = suite.api
        .pop(queue, 'wait=true&timeout=20000', controller.signal)
        .catch((error: Error) => error);
      await waitParked(1);
      controller.abort();
      await waiting;
      await waitParked(0);
      await suite.api.push([{ queue, payload: 'kept' }]);
      const reply = await suite.api.pop(queue);
      assert.equal(reply.status, 200);
      assert.equal(reply.body.messages[0].data, 'kept');
    });

    test('transactions apply all or nothing', async () => {
      // One namespace: on Redis Cluster the suite groups slots by namespace, so both queues share one.
      const source = queueName('txn');
      const target = queueName('txn');
      await suite.api.push([{ queue: source, payload: 'in', transactionId: 's1' }]);
      const popped = (await suite.api.pop(source)).body.messages[0];
      const refused = await suite.api.call('POST', '/api/v1/transaction', {
        operations: [
          { type: 'push', items: [{ queue: target, payload: 'out', transactionId: 'o1' }] },
          { type: 'ack', transactionId: 's1', partitionId: popped.partitionId, leaseId: 'wrong-lease' },
        ],
      });
      assert.equal(refused.status, 200);
      assert.equal(refused.body.success, false);
      assert.match(refused.body.error, /Invalid or expired lease/);
      assert.equal(
        (await suite.api.pop(target)).status,
        204,
        'the push of a refused transaction is not applied',
      );
      const committed = await suite.api.call('POST', '/api/v1/transaction', {
        operations: [
          { type: 'push', items: [{ queue: target, payload: 'out', transactionId: 'o1' }] },
          {
            type: 'ack',
            transactionId: 's1',
            partitionId: popped.partitionId,
            leaseId: popped.leaseId,
            status: 'completed',
          },
        ],
      });
      assert.equal(committed.body.success, true);
      assert.equal(committed.body.results.length, 2);
      assert.equal(committed.body.results[0].type, 'push');
      assert.equal(committed.body.results[1].type, 'ack');
      assert.equal((await suite.api.pop(target)).body.messages[0].data, 'out');
      assert.equal((await suite.api.pop(source)).status, 204);
      assert.equal(
        (await suite.api.call('POST', '/api/v1/transaction', { operations: [{ type: 'nope' }] })).status,
        400,
      );
      assert.equal((await suite.api.call('POST', '/api/v1/transaction', {})).status, 400);
    });

    test('maxSize refuses pushes with 429', async () => {
      const small = queueName();
      await suite.api.configure(small, { maxSize: 2 });
      assert.equal(
        (
          await suite.api.push([
            { queue: small, payload: 1 },
            { queue: small, payload: 2 },
          ])
        ).status,
        201,
      );
      const full = await suite.api.push([{ queue: small, payload: 3 }]);
      assert.equal(full.status, 429);
      assert.match(full.body.error, /full/);
    });

    test('configure validates and echoes options', async () => {
      const queue = queueName('ns.task');
      const reply = await suite.api.configure(queue, { leaseTime: 30, retryLimit: 2 });
      assert.equal(reply.status, 200);
      assert.equal(reply.body.configured, true);
      assert.equal(reply.body.namespace, 'ns');
      assert.equal(reply.body.task, 'task');
      assert.equal(reply.body.options.leaseTime, 30);
      assert.equal((await suite.api.configure(queue, { leaseTime: -1 })).status, 400);
      assert.equal((await suite.api.configure(queue, { retentionEnabled: 'yes' })).status, 400);
      assert.equal((await suite.api.call('POST', '/api/v1/configure', { options: {} })).status, 400);
    });

    test('read and admin routes answer', async () => {
      const queue = queueName('reads.task');
      const pushed = await suite.api.push([{ queue, payload: { r: 1 }, transactionId: 'r1' }]);
      const partitionId = pushed.body[0].partition_id;
      await suite.api.pop(queue, 'consumerGroup=readers&autoAck=true');
      assert.equal((await suite.api.call('POST', '/api/v1/stats/refresh')).status, 200);
      const queues = await suite.api.call('GET', '/api/v1/resources/queues');
      assert.ok(queues.body.queues.some((q: any) => q.name === queue));
      const resource = await suite.api.call('GET', `/api/v1/resources/queues/${encodeURIComponent(queue)}`);
      assert.equal(resource.body.name, queue);
      assert.equal(resource.body.partitions[0].id, partitionId);
      assert.equal((await suite.api.call('GET', '/api/v1/resources/queues/missing-queue')).status, 404);
      assert.ok((await suite.api.call('GET', '/api/v1/resources/namespaces')).body.namespaces.length > 0);
      assert.ok(Array.isArray((await suite.api.call('GET', '/api/v1/resources/tasks')).body.tasks));
      assert.equal(typeof (await suite.api.call('GET', '/api/v1/resources/overview')).body.queues, 'number');
      const messages = await suite.api.call('GET', `/api/v1/messages?queue=${encodeURIComponent(queue)}`);
      assert.equal(messages.body.messages[0].transactionId, 'r1');
      const one = await suite.api.call('GET', `/api/v1/messages/${partitionId}/r1`);
      assert.deepEqual(one.body.data, { r: 1 });
      assert.equal((await suite.api.call('GET', '/api/v1/status')).status, 200);
      const status = await suite.api.call('GET', `/api/v1/status/queues/${encodeURIComponent(queue)}`);
      assert.equal(status.body.totals.total, 1);
      assert.equal((await suite.api.call('GET', '/api/v1/status/queues')).status, 200);
      assert.equal((await suite.api.call('GET', '/api/v1/status/analytics')).status, 200);
      const groups = await suite.api.call('GET', '/api/v1/consumer-groups');
      assert.ok(groups.body.some((g: any) => g.name === 'readers' && g.queueName === queue));
      const readers = await suite.api.call('GET', '/api/v1/consumer-groups/readers');
      assert.equal(readers.body[queue].partitions.length, 1);
      assert.equal((await suite.api.call('GET', '/api/v1/consumer-groups/lagging')).status, 200);
      assert.equal(
        (
          await suite.api.call('POST', '/api/v1/consumer-groups/readers/subscription', {
            queue,
            subscriptionMode: 'all',
          })
        ).status,
        200,
      );
      assert.equal(
        (
          await suite.api.call(
            'DELETE',
            `/api/v1/consumer-groups/readers/queues/${encodeURIComponent(queue)}`,
          )
        ).status,
        200,
      );
      assert.equal((await suite.api.call('GET', '/api/v1/consumer-groups/readers')).body[queue], undefined);
      const trace = await suite.api.call('POST', '/api/v1/traces', {
        partitionId,
        transactionId: 'r1',
        traceName: 'order-1',
        data: { step: 1 },
      });
      assert.equal(trace.status, 201);
      assert.equal((await suite.api.call('GET', `/api/v1/traces/${partitionId}/r1`)).body.traces.length, 1);
      assert.equal((await suite.api.call('GET', '/api/v1/traces/by-name/order-1')).body.traces.length, 1);
      assert.ok(
        (await suite.api.call('GET', '/api/v1/traces/names')).body.names.some(
          (n: any) => n.name === 'order-1',
        ),
      );
      assert.equal((await suite.api.call('DELETE', `/api/v1/messages/${partitionId}/r1`)).status, 200);
      assert.equal((await suite.api.call('GET', `/api/v1/messages/${partitionId}/r1`)).status, 404);
      assert.equal(
        (await suite.api.call('DELETE', `/api/v1/resources/queues/${encodeURIComponent(queue)}`)).status,
        200,
      );
      assert.equal(
        (await suite.api.call('GET', `/api/v1/resources/queues/${encodeURIComponent(queue)}`)).status,
        404,
      );
      assert.equal((await suite.api.call('GET', '/health')).status, 200);
      const metrics = await fetch(`${suite.broker.url}/metrics/prometheus`).then((r) => r.text());
      assert.match(metrics, /herald_broker_push_total/);
      assert.match(metrics, /herald_broker_pending_messages/);
    });

    test('maintenance toggles refuse pushes (503) and pause pops (204)', async () => {
      const queue = queueName();
      await suite.api.push([{ queue, payload: 1 }]);
      assert.equal(
        (await suite.api.call('POST', '/api/v1/system/maintenance/pop', { enabled: true })).body
          .popMaintenanceMode,
        true,
      );
      assert.equal((await suite.api.pop(queue)).status, 204);
      await suite.api.call('POST', '/api/v1/system/maintenance/pop', { enabled: false });
      assert.equal(
        (await suite.api.call('POST', '/api/v1/system/maintenance', { enabled: true })).status,
        200,
      );
      assert.equal((await suite.api.push([{ queue, payload: 2 }])).status, 503);
      assert.equal((await suite.api.call('GET', '/api/v1/system/maintenance')).body.maintenanceMode, true);
      await suite.api.call('POST', '/api/v1/system/maintenance', { enabled: false });
      assert.equal((await suite.api.push([{ queue, payload: 2 }])).status, 201);
      assert.equal((await suite.api.pop(queue)).status, 200);
      assert.equal((await suite.api.call('POST', '/api/v1/system/maintenance', {})).status, 400);
    });
  });

  /*
   * Time-driven options on a clock the tests move (clockedBrokerSuite): nothing happens before
   * the test moves the time past the moment it is due, and it happens when it does, without
   * waiting real time and whatever the machine's load.
   */
  describe(`broker contract, time-driven options (${backend})`, () => {
    const suite = clockedBrokerSuite(backend);
    const parkedNow = async () => (await suite.api.call('GET', '/api/v1/status')).body.parkedLongPolls;
    const parked = (count: number) =>
      waitFor(async () => (await parkedNow()) === count, { what: `${count} parked pops` });

    /** A long-poll that must stay parked until the clock passes `dueInMs`, then answer 200. */
    async function answeredWhenDue(queue: string, dueInMs: number, query = '') {
      const waiting = suite.api.pop(queue, `wait=true&timeout=60000${query}`);
      await parked(1);
      await suite.clock.advance(dueInMs - 1);
      assert.equal(await parkedNow(), 1, 'still waiting 1 ms before it is due');
      await suite.clock.advance(2);
      const reply = await waiting;
      assert.equal(reply.status, 200);
      return reply;
    }

    test('lease extension never shortens; unknown leases fail', async () => {
      const queue = await suite.queue();
      await suite.api.configure(queue, { leaseTime: 60 });
      await suite.api.push([{ queue, payload: 1 }]);
      const popped = (await suite.api.pop(queue)).body;
      const shorter = await suite.api.call('POST', `/api/v1/lease/${popped.leaseId}/extend`, { seconds: 5 });
      assert.equal(shorter.body[0].success, true);
      // On the suite's clock, standing still: the lease runs to exactly now + leaseTime.
      const now = suite.clock.now();
      assert.equal(Date.parse(shorter.body[0].expiresAt), now + 60_000, 'not shortened to 5 s');
      const longer = await suite.api.call('POST', `/api/v1/lease/${popped.leaseId}/extend`, { seconds: 600 });
      assert.equal(Date.parse(longer.body[0].expiresAt), now + 600_000);
      const unknown = await suite.api.call('POST', '/api/v1/lease/unknown/extend', {});
      assert.equal(unknown.body[0].success, false);
      assert.equal(
        (await suite.api.call('POST', `/api/v1/lease/${popped.leaseId}/extend`, { seconds: -1 })).status,
        400,
      );
    });

    test('a lease expiry counts as an attempt and redelivers (long-poll woken at the expiry)', async () => {
      const queue = await suite.queue();
      await suite.api.configure(queue, { leaseTime: 1, retryLimit: 5 });
      await suite.api.push([{ queue, payload: 1, transactionId: 'e1' }]);
      const first = (await suite.api.pop(queue)).body.messages[0];
      assert.equal(first.retryCount, 0);
      const second = await answeredWhenDue(queue, 1000);
      assert.equal(second.body.messages[0].transactionId, 'e1');
      assert.equal(second.body.messages[0].retryCount, 1);
      const stale = await suite.api.ack({
        transactionId: 'e1',
        partitionId: first.partitionId,
        leaseId: first.leaseId,
      });
      assert.equal(stale.body[0].error, 'Invalid or expired lease');
    });

    test('retryDelay holds the redelivery back', async () => {
      const queue = await suite.queue();
      await suite.api.configure(queue, { retryDelay: 400 });
      await suite.api.push([{ queue, payload: 1, transactionId: 'r1' }]);
      const popped = (await suite.api.pop(queue)).body.messages[0];
      await suite.api.ack({
        transactionId: 'r1',
        partitionId: popped.partitionId,
        leaseId: popped.leaseId,
        status: 'failed',
      });
      assert.equal((await suite.api.pop(queue)).status, 204);
      const later = await answeredWhenDue(queue, 400);
      assert.equal(later.body.messages[0].retryCount, 1);
    });

    test('ttl drops expired messages; delayedProcessing delays', async () => {
      const expiring = await suite.queue();
      await suite.api.configure(expiring, { ttl: 1 });
      await suite.api.push([{ queue: expiring, payload: 'old' }]);
      // Each probe is a new consumer group (reads from the start, leaves the queue mode alone).
      assert.equal((await suite.api.pop(expiring, 'consumerGroup=ttl-probe-1')).status, 200);
      await suite.clock.advance(1001);
      assert.equal((await suite.api.pop(expiring, 'consumerGroup=ttl-probe-2')).status, 204);
      assert.equal((await suite.api.pop(expiring)).status, 204);

      const delayed = await suite.queue();
      await suite.api.configure(delayed, { delayedProcessing: 1 });
      await suite.api.push([{ queue: delayed, payload: 'later' }]);
      assert.equal((await suite.api.pop(delayed)).status, 204);
      const reply = await answeredWhenDue(delayed, 1000);
      assert.equal(reply.body.messages[0].data, 'later');
    });

    test('windowBuffer waits for the partition to be quiet', async () => {
      const queue = await suite.queue();
      await suite.api.configure(queue, { windowBuffer: 1 });
      await suite.api.push([{ queue, payload: 1 }]);
      assert.equal((await suite.api.pop(queue)).status, 204);
      await answeredWhenDue(queue, 1000, '&batch=10');
    });

    test('retention deletes messages every group resolved, once older than completedRetentionSeconds', async () => {
      const queue = await suite.queue();
      await suite.api.configure(queue, { retentionEnabled: true, completedRetentionSeconds: 1 });
      await suite.api.push([{ queue, payload: 1, transactionId: 'keep-not' }]);
      const popped = (await suite.api.pop(queue, 'autoAck=true')).body.messages[0];
      const message = () => suite.api.call('GET', `/api/v1/messages/${popped.partitionId}/keep-not`);
      await suite.broker.storage.housekeeping.applyRetention();
      assert.equal((await message()).status, 200, 'kept while younger than completedRetentionSeconds');
      await suite.clock.advance(1001);
      await suite.broker.storage.housekeeping.applyRetention();
      assert.equal((await message()).status, 404);
      // Dedup lasts as long as the message is retained: the id is free again.
      const again = await suite.api.push([{ queue, payload: 2, transactionId: 'keep-not' }]);
      assert.equal(again.body[0].status, 'queued');
    });
  });
}

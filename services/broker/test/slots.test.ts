/*
 * Redis Cluster's one-slot rule, checked on standalone Redis (BROKER_REDIS_ONE_SLOT; docs/broker-topologies.md
 * "Redis topologies"): every route that runs a script works with the check on (a script call with
 * keys in two slots throws, which the route answers 500), and a transaction spanning slots
 * commits in each (prepared, committed, applied: cross-slot-transactions.test.ts); with
 * BROKER_REDIS_SLOT_GROUP=namespace the queues of one namespace share a slot, so a transaction
 * among them is one script and a streams query may span them. A streams query
 * keeps its state in its source queue's slot: its sink queues must share that slot.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { createRedis, parseRedisOptions } from '@herald/redis';
import { testRedisUrl, uniquePrefix, waitFor } from '@herald/testkit';
import type { Broker } from '../src/index.js';
import {
  type BrokerClient,
  brokerSuite,
  client,
  queueFamily,
  queueName,
  startTestBroker,
} from './helpers.js';

async function popOne(api: BrokerClient, queue: string, query = '') {
  const reply = await api.pop(queue, query);
  assert.equal(reply.status, 200, `pop ${queue}`);
  return reply.body.messages[0];
}

describe('one slot per call (BROKER_REDIS_ONE_SLOT)', () => {
  const suite = brokerSuite('redis', { BROKER_REDIS_ONE_SLOT: 'true' });

  test('every queue route runs its scripts in the queue slot', async () => {
    const { api } = suite;
    const queue = queueName('slots');
    assert.equal((await api.configure(queue, { retryLimit: 0, leaseTime: 30 })).status, 200);
    assert.equal(
      (await api.push([1, 2, 3].map((n) => ({ queue, payload: n, transactionId: `m${n}` })))).status,
      201,
    );
    const first = await popOne(api, queue);
    const extended = await api.call('POST', `/api/v1/lease/${first.leaseId}/extend`, { seconds: 60 });
    assert.equal(extended.body[0].success, true);
    const failed = await api.ack({ ...pick(first), status: 'failed' });
    assert.equal(failed.body[0].success, true);
    assert.equal(failed.body[0].dlq, true, 'retryLimit 0: the failure dead-letters');
    const dead = await api.call('GET', `/api/v1/dlq?queue=${encodeURIComponent(queue)}`);
    assert.equal(dead.body.total, 1);
    assert.equal((await api.call('POST', '/api/v1/dlq/requeue', { queue, all: true })).body.requeued, 1);
    const second = await popOne(api, queue);
    assert.equal((await api.ack({ ...pick(second), status: 'completed' })).body[0].success, true);
    const transaction = await api.call('POST', '/api/v1/transaction', {
      operations: [{ type: 'push', items: [{ queue, payload: 4, transactionId: 'm4' }] }],
    });
    assert.equal(transaction.body.success, true);
    assert.equal((await api.call('GET', `/api/v1/status/queues/${encodeURIComponent(queue)}`)).status, 200);
    assert.equal((await api.call('POST', '/api/v1/stats/refresh')).status, 200);
    const seek = await api.call(
      'POST',
      `/api/v1/consumer-groups/g2/queues/${encodeURIComponent(queue)}/seek`,
      {
        toEnd: true,
      },
    );
    assert.equal(seek.body.success, true);
    const deleteGroup = await api.call(
      'DELETE',
      `/api/v1/consumer-groups/g2/queues/${encodeURIComponent(queue)}`,
    );
    assert.equal(deleteGroup.body.success, true);
    const third = await popOne(api, queue);
    const deleted = await api.call('DELETE', `/api/v1/messages/${third.partitionId}/${third.transactionId}`);
    assert.equal(deleted.body.success, true);
    const trace = await api.call('POST', '/api/v1/traces', {
      partitionId: third.partitionId,
      transactionId: third.transactionId,
      data: { step: 1 },
      traceNames: ['slots-a', 'slots-b'],
    });
    assert.equal(trace.status, 201);
    const traces = await api.call('GET', `/api/v1/traces/${third.partitionId}/${third.transactionId}`);
    assert.deepEqual(
      traces.body.traces.map((entry: { data: unknown }) => entry.data),
      [{ step: 1 }],
    );
    assert.equal((await api.call('GET', '/api/v1/traces/by-name/slots-b')).body.traces.length, 1);
    const removed = await api.call('DELETE', `/api/v1/resources/queues/${encodeURIComponent(queue)}`);
    assert.equal(removed.body.existed, true);
  });

  test('a transaction spanning two slots commits in both (cross-slot-transactions.test.ts: all or nothing)', async () => {
    const { api } = suite;
    const source = queueName('src');
    const target = queueName('dst');
    await api.push([{ queue: source, payload: 'in', transactionId: 's1' }]);
    const popped = await popOne(api, source);
    const committed = await api.call('POST', '/api/v1/transaction', {
      operations: [
        { type: 'push', items: [{ queue: target, payload: 'out', transactionId: 'o1' }] },
        { type: 'ack', ...pick(popped), status: 'completed' },
      ],
    });
    assert.equal(committed.status, 200);
    assert.equal(committed.body.success, true, committed.body.error);
    assert.equal((await popOne(api, target)).data, 'out');
    const acked = await api.ack({ ...pick(popped), status: 'completed' });
    assert.equal(acked.body[0].repeat, true, 'the ack was applied by the transaction');
  });
});

describe('slot group per namespace (BROKER_REDIS_SLOT_GROUP=namespace)', () => {
  const suite = brokerSuite('redis', { BROKER_REDIS_ONE_SLOT: 'true', BROKER_REDIS_SLOT_GROUP: 'namespace' });

  test('a transaction spanning queues of one namespace commits in one script; across namespaces too', async () => {
    const { api } = suite;
    const namespace = queueName('ns').replaceAll('.', '-');
    const source = `${namespace}.source`;
    const target = `${namespace}.target`;
    await api.push([{ queue: source, payload: 'in', transactionId: 's1' }]);
    const popped = await popOne(api, source);
    const committed = await api.call('POST', '/api/v1/transaction', {
      operations: [
        { type: 'push', items: [{ queue: target, payload: 'out', transactionId: 'o1' }] },
        { type: 'ack', ...pick(popped), status: 'completed' },
      ],
    });
    assert.equal(committed.body.success, true, committed.body.error);
    assert.equal((await popOne(api, target)).data, 'out');

    const elsewhere = `${namespace}-other.target`;
    await api.push([{ queue: source, payload: 'again', transactionId: 's2' }]);
    const next = await popOne(api, source);
    const across = await api.call('POST', '/api/v1/transaction', {
      operations: [
        { type: 'ack', ...pick(next), status: 'completed' },
        { type: 'push', items: [{ queue: elsewhere, payload: 'out', transactionId: 'o2' }] },
      ],
    });
    assert.equal(across.body.success, true, across.body.error);
    assert.equal((await popOne(api, elsewhere)).data, 'out');
    assert.equal((await api.ack({ ...pick(next), status: 'completed' })).body[0].repeat, true);
  });

  test('a streams query whose source and sink share a namespace commits state, sink push and ack in one script', async () => {
    const { api } = suite;
    const queue = queueFamily('st-ns');
    await api.push([{ queue: queue('source'), payload: 'in', transactionId: 's1' }]);
    const registered = await api.call('POST', '/streams/v1/queries', {
      name: queueName('st-ns-q'),
      source_queue: queue('source'),
      sink_queue: queue('sink'),
      config_hash: 'h1',
    });
    assert.equal(registered.status, 200, JSON.stringify(registered.body));
    const group = `streams.${registered.body.name}`;
    const popped = await popOne(api, queue('source'), `consumerGroup=${encodeURIComponent(group)}`);
    const cycle = await api.call('POST', '/streams/v1/cycle', {
      query_id: registered.body.query_id,
      partition_id: popped.partitionId,
      consumer_group: group,
      state_ops: [{ type: 'upsert', key: 'k', value: 1 }],
      push_items: [{ queue: queue('sink'), payload: 'out', transactionId: 'o1' }],
      ack: { transactionId: 's1', leaseId: popped.leaseId, status: 'completed', count: 1 },
    });
    assert.equal(cycle.body.success, true, JSON.stringify(cycle.body));
    assert.equal(cycle.body.push_results[0].status, 'queued');
    assert.equal((await popOne(api, queue('sink'))).data, 'out');
    assert.equal((await api.pop(queue('source'), `consumerGroup=${encodeURIComponent(group)}`)).status, 204);
  });
});

function pick(message: { transactionId: string; partitionId: string; leaseId: string }) {
  return { transactionId: message.transactionId, partitionId: message.partitionId, leaseId: message.leaseId };
}

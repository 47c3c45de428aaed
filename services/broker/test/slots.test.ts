/*
 * Redis Cluster's one-slot rule, checked on standalone Redis (BROKER_REDIS_ONE_SLOT; docs/broker-topologies.md
 * "Redis topologies"): every route that runs a script works with the check on (a script call with
 * keys in two slots throws, which the route answers 500), and a transaction spanning slots
 * commits in each (prepared, committed, applied: cross-slot-transactions.test.ts); with
 * BROKER_REDIS_SLOT_GROUP=namespace the queues of one namespace share a slot, so a transaction
 * among them is one script. A streams query keeps its state in its source queue's slot; a cycle's
 * pushes to sinks in other slots commit with it as a transaction across slots.
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

describe('notifications per queue (BROKER_REDIS_ONE_SLOT)', () => {
  const prefix = uniquePrefix('slots-notify');
  const nodes: Broker[] = [];
  let url: string;
  before(async () => {
    // Standalone whatever HERALD_TEST_TOPOLOGY says: the test counts subscribers on that server.
    url = await testRedisUrl();
    for (let index = 0; index < 2; index++) {
      nodes.push(
        await startTestBroker('redis', {
          REDIS_URL: url,
          BROKER_REDIS_ONE_SLOT: 'true',
          BROKER_KEY_PREFIX: prefix,
        }),
      );
    }
  });
  after(async () => {
    for (const node of nodes) await node.close();
  });

  test("a pop parked on one node is woken by a push through another, over the queue's own channel", async () => {
    const parked = { api: client((nodes[0] as Broker).url) };
    const pusher = { api: client((nodes[1] as Broker).url) };
    const queue = queueName('notify');
    const channel = `${prefix}{${encodeURIComponent(queue)}}:notify`;
    const redis = createRedis(parseRedisOptions(url, { connectionName: 'slots-test' }));
    try {
      // Long enough that a lost notification shows as a 204 at the end of the wait.
      const pop = parked.api.pop(queue, 'wait=true&timeout=30000');
      // Parked and subscribed to the queue's channel (nothing else carries its notifications).
      await waitFor(async () => {
        const [, subscribers] = (await redis.pubsub('NUMSUB', channel)) as [string, number];
        return subscribers >= 1;
      });
      assert.equal((await pusher.api.push([{ queue, payload: 'wake', transactionId: 'w1' }])).status, 201);
      const reply = await pop;
      assert.equal(reply.status, 200);
      assert.equal(reply.body.messages[0].data, 'wake');
    } finally {
      redis.disconnect();
    }
  });
});

describe('streams where slots are enforced (BROKER_REDIS_ONE_SLOT)', () => {
  const suite = brokerSuite('redis', { BROKER_REDIS_ONE_SLOT: 'true' });

  test('a query without sink runs its cycles (state and source ack) in its source queue slot', async () => {
    const { api } = suite;
    const source = queueName('st-slot');
    await api.push([{ queue: source, payload: 'in', transactionId: 'm1' }]);
    const registered = await api.call('POST', '/streams/v1/queries', {
      name: queueName('st-slot-q'),
      source_queue: source,
      config_hash: 'h1',
    });
    assert.equal(registered.status, 200, JSON.stringify(registered.body));
    const group = `streams.${registered.body.name}`;
    const popped = await popOne(api, source, `consumerGroup=${encodeURIComponent(group)}`);
    const cycle = await api.call('POST', '/streams/v1/cycle', {
      query_id: registered.body.query_id,
      partition_id: popped.partitionId,
      consumer_group: group,
      state_ops: [{ type: 'upsert', key: 'k', value: { n: 1 } }],
      ack: { transactionId: 'm1', leaseId: popped.leaseId, status: 'completed', count: 1 },
    });
    assert.equal(cycle.body.success, true, JSON.stringify(cycle.body));
    assert.equal(cycle.body.ack_result.lease_released, true);
    const state = await api.call('POST', '/streams/v1/state/get', {
      query_id: registered.body.query_id,
      partition_id: popped.partitionId,
    });
    assert.deepEqual(
      state.body.rows.map((row: { key: string; value: unknown }) => [row.key, row.value]),
      [['k', { n: 1 }]],
    );
  });

  test('a sink queue in another slot is registered, and a cycle commits in both slots (cross-slot-transactions.test.ts: all or nothing)', async () => {
    const { api } = suite;
    const source = queueName('st-slot-src');
    const elsewhere = queueName('st-slot-other');
    const registered = await api.call('POST', '/streams/v1/queries', {
      name: queueName('st-slot-q'),
      source_queue: source,
      sink_queue: elsewhere,
      config_hash: 'h1',
    });
    assert.equal(registered.status, 200, JSON.stringify(registered.body));
    const cycle = await api.call('POST', '/streams/v1/cycle', {
      query_id: registered.body.query_id,
      partition_id: 'p',
      state_ops: [{ type: 'upsert', key: 'k', value: 1 }],
      push_items: [{ queue: elsewhere, payload: 'out', transactionId: 'o1' }],
    });
    assert.equal(cycle.body.success, true, JSON.stringify(cycle.body));
    assert.deepEqual(
      cycle.body.push_results.map((result: { status: string; transaction_id: string }) => [
        result.status,
        result.transaction_id,
      ]),
      [['queued', 'o1']],
    );
    const state = await api.call('POST', '/streams/v1/state/get', {
      query_id: registered.body.query_id,
      partition_id: 'p',
    });
    assert.deepEqual(
      state.body.rows.map((row: { key: string }) => row.key),
      ['k'],
    );
    assert.equal((await popOne(api, elsewhere)).data, 'out');
  });

  test('a source queue in another slot needs a reset: the state starts empty in the new slot', async () => {
    const { api } = suite;
    const name = queueName('st-slot-move');
    const first = await api.call('POST', '/streams/v1/queries', {
      name,
      source_queue: queueName('st-slot-a'),
      config_hash: 'h1',
    });
    const queryId = first.body.query_id;
    await api.call('POST', '/streams/v1/cycle', {
      query_id: queryId,
      partition_id: 'p',
      state_ops: [{ type: 'upsert', key: 'old', value: 1 }],
    });
    const moved = queueName('st-slot-b');
    const kept = await api.call('POST', '/streams/v1/queries', {
      name,
      source_queue: moved,
      config_hash: 'h1',
    });
    assert.equal(kept.status, 409);
    assert.match(kept.body.error, /keeps its state in the Redis Cluster slot of queue/);
    const sameHashReset = { name, source_queue: moved, config_hash: 'h1', reset: true };
    assert.equal((await api.call('POST', '/streams/v1/queries', sameHashReset)).status, 409);

    const reset = await api.call('POST', '/streams/v1/queries', { ...sameHashReset, config_hash: 'h2' });
    assert.equal(reset.status, 200, JSON.stringify(reset.body));
    assert.deepEqual([reset.body.query_id, reset.body.reset], [queryId, true]);
    const stateGet = () =>
      api.call('POST', '/streams/v1/state/get', { query_id: queryId, partition_id: 'p' });
    assert.deepEqual((await stateGet()).body.rows, []);
    const cycle = await api.call('POST', '/streams/v1/cycle', {
      query_id: queryId,
      partition_id: 'p',
      state_ops: [{ type: 'upsert', key: 'new', value: 2 }],
    });
    assert.equal(cycle.body.success, true, JSON.stringify(cycle.body));
    assert.deepEqual(
      (await stateGet()).body.rows.map((row: { key: string }) => row.key),
      ['new'],
    );
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

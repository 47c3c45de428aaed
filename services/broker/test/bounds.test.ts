/*
 * Hostile bodies and queries (issue #8, defects 2 and 7): every bound of docs/broker-api.md
 * "Limits" refuses with a 4xx JSON error naming the field, never a 5xx, on both backends, and
 * the node keeps serving afterwards. Sizes are the attacks' own (100k trace names, 200k DLQ
 * ids, 10,000 and 1,000,000 nesting levels), not the limits, so a changed limit cannot make a
 * row pass vacuously.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { stopTestRedis } from '@herald/testkit';
import type { Broker } from '../src/index.js';
import { BACKENDS, client, queueName, startTestBroker } from './helpers.js';

after(() => stopTestRedis());

const LONE = '\ud800';
const nested = (depth: number) => `${'['.repeat(depth)}${']'.repeat(depth)}`;

interface Row {
  readonly name: string;
  readonly method: 'GET' | 'POST';
  /** The path, given the name of a configured queue that holds one message. */
  readonly path: (queue: string) => string;
  /** An object (sent as JSON) or a raw text body. */
  readonly body?: (queue: string) => unknown;
  readonly status: 400 | 413;
  /** What the error message must name. */
  readonly error: RegExp;
}

const ROWS: Row[] = [
  {
    name: 'push payload nested 10,000 deep',
    method: 'POST',
    path: () => '/api/v1/push',
    body: (queue) => `{"items":[{"queue":${JSON.stringify(queue)},"payload":${nested(10_000)}}]}`,
    status: 400,
    error: /nest/i,
  },
  {
    name: 'push payload nested 1,000,000 deep',
    method: 'POST',
    path: () => '/api/v1/push',
    body: (queue) => `{"items":[{"queue":${JSON.stringify(queue)},"payload":${nested(1_000_000)}}]}`,
    status: 400,
    error: /nest/i,
  },
  {
    name: 'trace data nested 10,000 deep (outside any payload)',
    method: 'POST',
    path: () => '/api/v1/traces',
    body: () => `{"partitionId":"p","transactionId":"t","data":${nested(10_000)}}`,
    status: 400,
    error: /nest/i,
  },
  {
    name: 'deep nesting inside a string is text, not nesting',
    method: 'POST',
    path: () => '/api/v1/push',
    body: () => ({ items: [{ queue: LONE, payload: nested(10_000) }] }),
    status: 400,
    error: /queue/,
  },
  {
    name: 'lone surrogate in a push queue name',
    method: 'POST',
    path: () => '/api/v1/push',
    body: () => ({ items: [{ queue: LONE, payload: 1 }] }),
    status: 400,
    error: /items\[0\]\.queue/,
  },
  {
    name: 'lone surrogate in a push partition',
    method: 'POST',
    path: () => '/api/v1/push',
    body: (queue) => ({ items: [{ queue, partition: `p${LONE}`, payload: 1 }] }),
    status: 400,
    error: /items\[0\]\.partition/,
  },
  {
    name: 'lone surrogate in a push transactionId',
    method: 'POST',
    path: () => '/api/v1/push',
    body: (queue) => ({ items: [{ queue, transactionId: `\udc00t`, payload: 1 }] }),
    status: 400,
    error: /transactionId/,
  },
  {
    name: 'lone surrogate in a configured queue name',
    method: 'POST',
    path: () => '/api/v1/configure',
    body: () => ({ queue: `q${LONE}` }),
    status: 400,
    error: /queue/,
  },
  {
    name: 'lone surrogate in a batch ack consumer group',
    method: 'POST',
    path: () => '/api/v1/ack/batch',
    body: () => ({
      consumerGroup: LONE,
      acknowledgments: [{ transactionId: 't', partitionId: 'p', status: 'completed' }],
    }),
    status: 400,
    error: /consumerGroup/,
  },
  {
    name: 'lone surrogate in a transaction push',
    method: 'POST',
    path: () => '/api/v1/transaction',
    body: () => ({ operations: [{ type: 'push', items: [{ queue: LONE, payload: 1 }] }] }),
    status: 400,
    error: /queue/,
  },
  {
    name: 'lone surrogate in a DLQ requeue queue',
    method: 'POST',
    path: () => '/api/v1/dlq/requeue',
    body: () => ({ queue: LONE, dlqIds: ['1-0'] }),
    status: 400,
    error: /queue/,
  },
  {
    name: 'DLQ requeue with 200,000 ids',
    method: 'POST',
    path: () => '/api/v1/dlq/requeue',
    body: (queue) => ({ queue, dlqIds: Array.from({ length: 200_000 }, (_, i) => `${i}-0`) }),
    status: 400,
    error: /dlqIds.*at most/,
  },
  {
    name: 'DLQ requeue with an id that is not a dead-letter id',
    method: 'POST',
    path: () => '/api/v1/dlq/requeue',
    body: (queue) => ({ queue, dlqIds: ['not-an-id'] }),
    status: 400,
    error: /dlqIds\[0\]/,
  },
  {
    name: 'seek to timestamp 1e20',
    method: 'POST',
    path: (queue) => `/api/v1/consumer-groups/g/queues/${encodeURIComponent(queue)}/seek`,
    body: () => ({ timestamp: 1e20 }),
    status: 400,
    error: /timestamp/,
  },
  {
    name: 'seek one partition to timestamp 1e20',
    method: 'POST',
    path: (queue) => `/api/v1/consumer-groups/g/queues/${encodeURIComponent(queue)}/partitions/Default/seek`,
    body: () => ({ timestamp: 1e20 }),
    status: 400,
    error: /timestamp/,
  },
  {
    name: 'seek to a fractional timestamp',
    method: 'POST',
    path: (queue) => `/api/v1/consumer-groups/g/queues/${encodeURIComponent(queue)}/seek`,
    body: () => ({ timestamp: 1.5 }),
    status: 400,
    error: /timestamp/,
  },
  {
    name: 'subscription from 1e20',
    method: 'POST',
    path: () => '/api/v1/consumer-groups/g/subscription',
    body: (queue) => ({ queue, subscriptionFrom: 1e20 }),
    status: 400,
    error: /subscriptionFrom/,
  },
  {
    name: 'trace with 100,000 names',
    method: 'POST',
    path: () => '/api/v1/traces',
    body: () => ({
      partitionId: 'p',
      transactionId: 't',
      traceNames: Array.from({ length: 100_000 }, (_, i) => `n${i}`),
    }),
    status: 400,
    error: /traceNames.*at most/,
  },
  {
    name: 'traceNames that is not an array',
    method: 'POST',
    path: () => '/api/v1/traces',
    body: () => ({ partitionId: 'p', transactionId: 't', traceNames: 'x' }),
    status: 400,
    error: /traceNames/,
  },
  {
    name: 'trace data over its byte bound',
    method: 'POST',
    path: () => '/api/v1/traces',
    body: () => ({ partitionId: 'p', transactionId: 't', data: 'x'.repeat(2 * 1024 * 1024) }),
    status: 400,
    error: /data.*bytes/,
  },
  {
    name: 'transaction push operation with 100,000 items',
    method: 'POST',
    path: () => '/api/v1/transaction',
    body: (queue) => ({
      operations: [{ type: 'push', items: Array.from({ length: 100_000 }, () => ({ queue })) }],
    }),
    status: 400,
    error: /at most/,
  },
  {
    name: 'transaction with 100,000 operations',
    method: 'POST',
    path: () => '/api/v1/transaction',
    body: () => ({ operations: Array.from({ length: 100_000 }, () => ({ type: 'nope' })) }),
    status: 400,
    error: /operations.*at most/,
  },
  {
    name: 'pop partitions=1e9',
    method: 'GET',
    path: (queue) => `/api/v1/pop/queue/${encodeURIComponent(queue)}?partitions=1e9`,
    status: 400,
    error: /partitions/,
  },
  {
    name: 'pop batch=-1',
    method: 'GET',
    path: (queue) => `/api/v1/pop/queue/${encodeURIComponent(queue)}?batch=-1`,
    status: 400,
    error: /batch/,
  },
  {
    name: 'messages limit=NaN',
    method: 'GET',
    path: () => '/api/v1/messages?limit=NaN',
    status: 400,
    error: /limit/,
  },
  {
    name: 'request body over BROKER_BODY_LIMIT_BYTES (16 MiB in this suite)',
    method: 'POST',
    path: () => '/api/v1/push',
    body: () => `{"items":[],"pad":"${'x'.repeat(17 * 1024 * 1024)}"}`,
    status: 413,
    error: /./,
  },
];

for (const backend of BACKENDS) {
  describe(`broker input bounds (${backend})`, () => {
    let broker: Broker;
    let api: ReturnType<typeof client>;
    const queue = queueName('bounds');
    before(async () => {
      broker = await startTestBroker(backend, { BROKER_BODY_LIMIT_BYTES: String(16 * 1024 * 1024) });
      api = client(broker.url);
      assert.equal((await api.push([{ queue, payload: { n: 1 } }])).status, 201);
    });
    after(() => broker.close());

    for (const row of ROWS) {
      test(`${row.name} → ${row.status}`, async () => {
        const reply = await api.call(row.method, row.path(queue), row.body?.(queue));
        assert.equal(reply.status, row.status, JSON.stringify(reply.body));
        assert.equal(typeof reply.body?.error, 'string');
        assert.match(reply.body.error, row.error);
        // The node is still up and its storage still answers.
        assert.equal((await api.call('GET', '/api/v1/resources/queues')).status, 200);
      });
    }

    test('a DLQ requeue of the maximum number of ids answers 200 (no argument spreading overflow)', async () => {
      const dlqIds = Array.from({ length: 10_000 }, (_, i) => `${i + 1}-0`);
      const reply = await api.call('POST', '/api/v1/dlq/requeue', { queue, dlqIds });
      assert.equal(reply.status, 200, JSON.stringify(reply.body));
      assert.equal(reply.body.requeued, 0);
    });

    test('a queue named with the maximum 512 characters is poppable by path', async () => {
      for (const unit of ['q', 'é', '\u4e2d']) {
        const long = unit.repeat(512);
        assert.equal((await api.push([{ queue: long, partition: long, payload: 1 }])).status, 201);
        const popped = await api.popPartition(long, long);
        assert.equal(popped.status, 200, JSON.stringify(popped.body));
        assert.equal(popped.body.messages[0].queue, long);
        const tooLong = await api.pop(`${long}x`);
        assert.equal(tooLong.status, 400);
        assert.match(tooLong.body.error, /queue must be at most 512/);
      }
    });

    test('a payload nested within the bound is stored and delivered unchanged', async () => {
      const own = queueName('nest');
      const payload = JSON.parse(nested(32));
      assert.equal((await api.push([{ queue: own, payload }])).status, 201);
      const popped = await api.pop(own);
      assert.equal(popped.status, 200);
      assert.deepEqual(popped.body.messages[0].data, payload);
    });
  });
}

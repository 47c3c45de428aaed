/*
 * `GET /api/v1/dlq` pages over every queue: its offset runs on from one queue's dead letters to
 * the next, with or without a consumer group, and `total` counts them all. Each queue's letters
 * are now read a few at a time within one budget for the request (view-budget.ts), the offset
 * skipped inside the queue instead of read and sliced by the route.
 */
import assert from 'node:assert/strict';
import { after, describe, test } from 'node:test';
import { stopTestRedis } from '@herald/testkit';
import { QUEUE_MODE } from '../src/storage.js';
import { BACKENDS, type BrokerClient, brokerSuite, queueName } from './helpers.js';

after(() => stopTestRedis());

interface Letter {
  queue: string;
  data: { n: number };
}

/** `count` dead letters on `queue`, payloads 0 … count − 1 in order. */
async function deadLetters(api: BrokerClient, queue: string, count: number): Promise<void> {
  assert.equal((await api.configure(queue, { deadLetterQueue: true })).status, 200);
  const pushed = await api.push(Array.from({ length: count }, (_, n) => ({ queue, payload: { n } })));
  assert.equal(pushed.status, 201);
  const popped = await api.pop(queue, `batch=${count}&wait=false`);
  const messages = (
    popped.body as { messages: { transactionId: string; partitionId: string; leaseId: string }[] }
  ).messages;
  assert.equal(messages.length, count);
  const failed = await api.ackBatch({
    acknowledgments: messages.map(({ transactionId, partitionId, leaseId }) => ({
      transactionId,
      partitionId,
      leaseId,
      status: 'dlq',
    })),
  });
  assert.equal(failed.status, 200);
}

for (const backend of BACKENDS) {
  describe(`dead-letter pages across queues (${backend})`, () => {
    const suite = brokerSuite(backend);

    test('the offset runs on across queues, with or without a group; total counts every letter', async () => {
      const stem = queueName('pages');
      const [a, b] = [`${stem}-a`, `${stem}-b`];
      await deadLetters(suite.api, a, 3);
      await deadLetters(suite.api, b, 4);
      const page = async (query: string) => {
        const reply = await suite.api.call('GET', `/api/v1/dlq?${query}`);
        assert.equal(reply.status, 200);
        const body = reply.body as { messages: Letter[]; total: number };
        return {
          total: body.total,
          letters: body.messages
            .filter((letter) => letter.queue === a || letter.queue === b)
            .map((letter) => `${letter.queue === a ? 'a' : 'b'}${letter.data.n}`),
        };
      };
      // Other tests of this file's broker may own queues too: name the two queues' letters only.
      for (const group of ['', `&consumerGroup=${QUEUE_MODE}`]) {
        assert.deepEqual(await page(`queue=${a}&limit=2&offset=1${group}`), {
          total: 3,
          letters: ['a1', 'a2'],
        });
        assert.deepEqual(await page(`queue=${b}&limit=10&offset=3${group}`), { total: 4, letters: ['b3'] });
      }
      const both = await suite.api.call('GET', '/api/v1/dlq?limit=1000');
      const names = (both.body as { messages: Letter[] }).messages.map((letter) => letter.queue);
      const before = names.filter((name) => name < a).length;
      for (const group of ['', `&consumerGroup=${QUEUE_MODE}`]) {
        const across = await page(`limit=3&offset=${before + 2}${group}`);
        assert.deepEqual(across.letters, ['a2', 'b0', 'b1']);
        const tail = await page(`limit=10&offset=${before + 5}${group}`);
        assert.deepEqual(tail.letters, ['b2', 'b3']);
      }
      assert.deepEqual(await page(`queue=${a}&consumerGroup=other`), { total: 0, letters: [] });
    });
  });
}

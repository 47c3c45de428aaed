/*
 * Acknowledgements are idempotent (issue #9, defect 2; docs/broker-api.md): a client that retries
 * an ack after a connection reset is told it succeeded (flagged `repeat`), and the retry
 * changes nothing — for single, batch and transactional acks, on both backends.
 */
import assert from 'node:assert/strict';
import { after, describe, test } from 'node:test';
import { stopTestRedis } from '@herald/testkit';
import { BACKENDS, clockedBrokerSuite } from './helpers.js';

after(() => stopTestRedis());

for (const backend of BACKENDS) {
  describe(`retried acks are repeats (${backend})`, () => {
    const suite = clockedBrokerSuite(backend);

    async function popOne(queue: string, retryLimit: number) {
      await suite.api.configure(queue, { retryLimit, leaseTime: 60 });
      await suite.api.push([{ queue, payload: 'x', transactionId: 't1' }]);
      const popped = await suite.api.pop(queue);
      assert.equal(popped.status, 200);
      return popped.body.messages[0];
    }

    const cases = [
      // status, retryLimit, expected dlq, retryCount of the redelivery (null: none expected)
      { status: 'completed', retryLimit: 3, dlq: false, redelivered: null },
      { status: 'success', retryLimit: 3, dlq: false, redelivered: null },
      { status: 'failed', retryLimit: 3, dlq: false, redelivered: 1 },
      { status: 'retry', retryLimit: 3, dlq: false, redelivered: 1 },
      { status: 'failed', retryLimit: 0, dlq: true, redelivered: null },
      { status: 'dlq', retryLimit: 3, dlq: true, redelivered: null },
    ] as const;
    for (const { status, retryLimit, dlq, redelivered } of cases) {
      test(`the same ${status} ack twice (retryLimit ${retryLimit}): both succeed, the second is a repeat that changes nothing`, async () => {
        const queue = await suite.queue('repeat');
        const message = await popOne(queue, retryLimit);
        const body = {
          transactionId: 't1',
          partitionId: message.partitionId,
          leaseId: message.leaseId,
          status,
          error: 'boom',
        };
        const first = await suite.api.ack(body);
        const second = await suite.api.ack(body);
        assert.deepEqual(
          [first.body[0].success, first.body[0].repeat, first.body[0].dlq],
          [true, false, dlq],
        );
        assert.deepEqual(
          [second.body[0].success, second.body[0].error, second.body[0].repeat, second.body[0].dlq],
          [true, null, true, dlq],
        );
        const next = await suite.api.pop(queue);
        if (redelivered === null) {
          assert.equal(next.status, 204);
        } else {
          assert.equal(next.status, 200);
          assert.equal(next.body.messages[0].retryCount, redelivered, 'one attempt counted, not two');
        }
        const dead = await suite.api.call('GET', `/api/v1/dlq?queue=${encodeURIComponent(queue)}`);
        assert.equal(dead.body.total, dlq ? 1 : 0);
      });
    }

    test('an ack retried after retention removed the message is still a repeat (single and batch)', async () => {
      const queue = await suite.queue('repeat-retained');
      await suite.api.configure(queue, {
        retryLimit: 3,
        leaseTime: 60,
        retentionEnabled: true,
        completedRetentionSeconds: 1,
      });
      await suite.api.push(
        ['a', 'b'].map((transactionId) => ({ queue, payload: transactionId, transactionId })),
      );
      const popped = (await suite.api.pop(queue, 'batch=2')).body;
      const acks = popped.messages.map((message: { transactionId: string; partitionId: string }) => ({
        transactionId: message.transactionId,
        partitionId: message.partitionId,
        leaseId: popped.leaseId,
        status: 'completed',
      }));
      const first = await suite.api.call('POST', '/api/v1/ack/batch', { acknowledgments: acks });
      assert.deepEqual(
        first.body.map((result: { success: boolean }) => result.success),
        [true, true],
      );
      // Past completedRetentionSeconds, the next retention run deletes both messages.
      await suite.clock.advance(1001);
      assert.ok(
        (await suite.broker.storage.housekeeping.applyRetention()) >= 2,
        'retention removed the acked messages',
      );
      const single = await suite.api.ack(acks[0]);
      assert.deepEqual(
        [single.body[0].success, single.body[0].error, single.body[0].repeat],
        [true, null, true],
      );
      const batch = await suite.api.call('POST', '/api/v1/ack/batch', { acknowledgments: acks });
      assert.deepEqual(
        batch.body.map((result: { success: boolean; repeat: boolean }) => [result.success, result.repeat]),
        [
          [true, true],
          [true, true],
        ],
      );
    });

    test('a batch ack sent twice: every item of the retry is a repeat', async () => {
      const queue = await suite.queue('repeat-batch');
      await suite.api.push(
        ['a', 'b', 'c'].map((transactionId) => ({ queue, payload: transactionId, transactionId })),
      );
      const popped = (await suite.api.pop(queue, 'batch=3')).body;
      const body = {
        acknowledgments: [
          { transactionId: 'a', partitionId: popped.partitionId, leaseId: popped.leaseId },
          { transactionId: 'b', partitionId: popped.partitionId, leaseId: popped.leaseId, status: 'failed' },
          { transactionId: 'c', partitionId: popped.partitionId, leaseId: popped.leaseId },
        ],
      };
      const first = await suite.api.ackBatch(body);
      const second = await suite.api.ackBatch(body);
      assert.deepEqual(
        first.body.map((r: any) => [r.success, r.repeat]),
        [
          [true, false],
          [true, false],
          [true, false],
        ],
      );
      assert.deepEqual(
        second.body.map((r: any) => [r.success, r.error, r.repeat]),
        [
          [true, null, true],
          [true, null, true],
          [true, null, true],
        ],
      );
      const again = await suite.api.pop(queue, 'batch=3');
      assert.deepEqual(
        again.body.messages.map((m: any) => [m.transactionId, m.retryCount]),
        [['b', 1]],
      );
    });

    test('a transaction sent twice: its ack is a repeat, the retry commits', async () => {
      const source = await suite.queue('repeat');
      const target = await suite.queue('repeat');
      const message = await popOne(source, 3);
      const body = {
        operations: [
          { type: 'push', items: [{ queue: target, payload: 'out', transactionId: 'o1' }] },
          {
            type: 'ack',
            transactionId: 't1',
            partitionId: message.partitionId,
            leaseId: message.leaseId,
            status: 'completed',
          },
        ],
      };
      const first = await suite.api.call('POST', '/api/v1/transaction', body);
      const second = await suite.api.call('POST', '/api/v1/transaction', body);
      assert.equal(first.body.success, true);
      assert.equal(second.body.success, true, JSON.stringify(second.body));
      assert.equal(first.body.results[1].repeat, false);
      assert.equal(second.body.results[1].repeat, true);
      assert.equal(second.body.results[0].status, 'duplicate', 'the retried push is deduplicated');
      const out = await suite.api.pop(target, 'batch=10');
      assert.equal(out.body.messages.length, 1);
      assert.equal((await suite.api.pop(source)).status, 204);
    });

    test('a whole lease acked with one answer: every retry of it is a repeat, whatever its transaction ids hold', async () => {
      // Such a batch's answers are kept as one record (lua/includes/lease-answers.lua) that
      // lists the transaction ids as JSON: quotes, slashes, newlines and NULs must survive.
      const queue = await suite.queue('repeat-record');
      const ids = ['1\n2', '12', '*x', 'a\nb\nc', '2\n', '["q"]', 'a/b\\c', 'é\u0000🦊', 'plain'];
      await suite.api.push(ids.map((transactionId) => ({ queue, payload: transactionId, transactionId })));
      const popped = (await suite.api.pop(queue, `batch=${ids.length}`)).body;
      assert.deepEqual(
        popped.messages.map((m: { transactionId: string }) => m.transactionId),
        ids,
      );
      await suite.api.push([{ queue, payload: 'later', transactionId: '2' }]);
      const acks = ids.map((transactionId) => ({
        transactionId,
        partitionId: popped.partitionId,
        leaseId: popped.leaseId,
        status: 'completed',
      }));
      const first = await suite.api.ackBatch({ acknowledgments: acks });
      assert.deepEqual(
        first.body.map((r: any) => [r.success, r.repeat]),
        ids.map(() => [true, false]),
      );
      for (const ack of acks) {
        const single = await suite.api.ack(ack);
        assert.deepEqual(
          [single.body[0].success, single.body[0].error, single.body[0].repeat],
          [true, null, true],
          JSON.stringify(ack.transactionId),
        );
      }
      const again = await suite.api.ackBatch({ acknowledgments: acks });
      assert.deepEqual(
        again.body.map((r: any) => [r.success, r.repeat]),
        ids.map(() => [true, true]),
      );
      const conflicting = await suite.api.ack({ ...acks[1], status: 'failed' });
      assert.deepEqual(
        [conflicting.body[0].success, conflicting.body[0].error],
        [false, 'Message already acknowledged'],
      );
      // A message the lease never held is no repeat of it.
      const outside = await suite.api.ack({ ...acks[0], transactionId: '2' });
      assert.deepEqual(
        [outside.body[0].success, outside.body[0].error, outside.body[0].repeat],
        [false, 'Invalid or expired lease', false],
      );
      const next = await suite.api.pop(queue, 'batch=10');
      assert.deepEqual(
        next.body.messages.map((m: { transactionId: string }) => m.transactionId),
        ['2'],
      );
    });

    test('a stale lease is still refused, and a conflicting second answer too', async () => {
      const queue = await suite.queue('repeat-stale');
      const message = await popOne(queue, 3);
      const completed = { transactionId: 't1', partitionId: message.partitionId, leaseId: message.leaseId };
      assert.equal((await suite.api.ack(completed)).body[0].success, true);
      const conflicting = await suite.api.ack({ ...completed, status: 'failed' });
      assert.deepEqual(
        [conflicting.body[0].success, conflicting.body[0].error],
        [false, 'Message already acknowledged'],
      );
      const stranger = await suite.api.ack({ ...completed, leaseId: 'another-lease' });
      assert.deepEqual(
        [stranger.body[0].success, stranger.body[0].error],
        [false, 'Invalid or expired lease'],
      );
    });
  });
}

/*
 * Long-poll wake-ups without a thundering herd (long-poll.ts): a push wakes only as many
 * parked pops as it can serve, and a woken pop that cannot use the work passes it on. The
 * broker runs on a clock these tests move (clockedBrokerSuite): a long-poll times out only
 * when the test moves the time past its deadline, so an answer before that is a wake-up,
 * never a timeout, whatever the machine's load.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { stopTestRedis, waitFor } from '@herald/testkit';
import type { PopRequest } from '../src/storage.js';
import { BACKENDS, clockedBrokerSuite } from './helpers.js';

after(() => stopTestRedis());

const TIMEOUT_MS = 2500;

for (const backend of BACKENDS) {
  describe(`long-poll wake-ups (${backend})`, () => {
    const suite = clockedBrokerSuite(backend);
    /** Pop attempts on the storage, by queue. */
    const attempts = new Map<string, number>();
    before(() => {
      const queues = suite.broker.storage.queues;
      const pop = queues.pop.bind(queues);
      queues.pop = (request: PopRequest) => {
        attempts.set(request.queue, (attempts.get(request.queue) ?? 0) + 1);
        return pop(request);
      };
    });

    const parkedNow = async () => (await suite.api.call('GET', '/api/v1/status')).body.parkedLongPolls;
    const parked = (count: number) =>
      waitFor(async () => (await parkedNow()) === count, { what: `${count} parked pops` });

    test('one message wakes one of several parked pops; the others keep waiting until their timeout', async () => {
      const queue = await suite.queue('herd');
      const settled = new Set<number>();
      const waiters = Array.from({ length: 4 }, (_, index) =>
        suite.api.pop(queue, `wait=true&timeout=${TIMEOUT_MS}`).then((reply) => {
          settled.add(index);
          return reply;
        }),
      );
      await parked(4);
      const before = attempts.get(queue) ?? 0;
      await suite.api.push([{ queue, payload: 'only one' }]);
      // The clock has not moved: no long-poll can have timed out.
      const first = await Promise.race(waiters);
      assert.equal(first.status, 200);
      assert.equal(first.body.messages[0].data, 'only one');
      assert.equal(await parkedNow(), 3);
      assert.equal(settled.size, 1);
      assert.equal((attempts.get(queue) ?? 0) - before, 1, 'only the woken pop ran a pop attempt');
      await suite.clock.advance(TIMEOUT_MS - 1);
      assert.equal(await parkedNow(), 3, 'no loser answers before its timeout');
      await suite.clock.advance(1);
      const replies = await Promise.all(waiters);
      assert.deepEqual(replies.map((reply) => reply.status).sort(), [200, 204, 204, 204]);
    });

    test('a woken pop that cannot take the work hands the wake-up on', async () => {
      const queue = await suite.queue('handoff');
      // Oldest first: a pop bound to another partition, then a pop on any partition. The push
      // wakes the oldest, which cannot take the message and passes the wake-up on.
      let boundSettled = false;
      const bound = suite.api
        .popPartition(queue, 'elsewhere', `wait=true&timeout=${TIMEOUT_MS}`)
        .then((reply) => {
          boundSettled = true;
          return reply;
        });
      await parked(1);
      const any = suite.api.pop(queue, `wait=true&timeout=${TIMEOUT_MS}`);
      await parked(2);
      await suite.api.push([{ queue, partition: 'here', payload: 'for any' }]);
      // The clock stands still: only a wake-up handed on can answer `any`.
      const reply = await any;
      assert.equal(reply.status, 200);
      assert.equal(reply.body.messages[0].data, 'for any');
      assert.equal(await parkedNow(), 1);
      assert.equal(boundSettled, false, 'the bound pop keeps waiting');
      await suite.clock.advance(TIMEOUT_MS);
      assert.equal((await bound).status, 204);
    });
  });
}

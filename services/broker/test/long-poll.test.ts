/*
 * Long-poll wake-ups without a thundering herd (long-poll.ts): a push wakes only as many
 * parked pops as it can serve, and a woken pop that cannot use the work passes it on.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { stopTestRedis, waitFor } from '@herald/testkit';
import type { Broker } from '../src/index.js';
import type { PopRequest } from '../src/storage.js';
import { BACKENDS, client, queueName, startTestBroker } from './helpers.js';

after(() => stopTestRedis());

const TIMEOUT_MS = 2500;

for (const backend of BACKENDS) {
  describe(`long-poll wake-ups (${backend})`, () => {
    let broker: Broker;
    let api: ReturnType<typeof client>;
    /** Pop attempts on the storage, by queue. */
    const attempts = new Map<string, number>();
    before(async () => {
      broker = await startTestBroker(backend);
      api = client(broker.url);
      const storage = broker.storage;
      const pop = storage.queues.pop.bind(storage.queues);
      storage.queues.pop = (request: PopRequest) => {
        attempts.set(request.queue, (attempts.get(request.queue) ?? 0) + 1);
        return pop(request);
      };
    });
    after(() => broker.close());

    const parked = (count: number) =>
      waitFor(async () => (await api.call('GET', '/api/v1/status')).body.parkedLongPolls === count, {
        what: `${count} parked pops`,
      });

    test('one message wakes one of several parked pops; the others keep waiting', async () => {
      const queue = queueName('herd');
      const started = Date.now();
      const waiters = Array.from({ length: 4 }, () =>
        api.pop(queue, `wait=true&timeout=${TIMEOUT_MS}`).then((reply) => ({ reply, at: Date.now() })),
      );
      await parked(4);
      const before = attempts.get(queue) ?? 0;
      await api.push([{ queue, payload: 'only one' }]);
      const first = await Promise.race(waiters);
      assert.equal(first.reply.status, 200);
      assert.equal(first.reply.body.messages[0].data, 'only one');
      assert.ok(first.at - started < TIMEOUT_MS, 'the winner answered before the long-poll timeout');
      assert.equal((await api.call('GET', '/api/v1/status')).body.parkedLongPolls, 3);
      assert.equal((attempts.get(queue) ?? 0) - before, 1, 'only the woken pop ran a pop attempt');
      const replies = await Promise.all(waiters);
      assert.deepEqual(replies.map(({ reply }) => reply.status).sort(), [200, 204, 204, 204]);
      for (const { reply, at } of replies) {
        if (reply.status === 204) assert.ok(at - started >= TIMEOUT_MS, 'a loser answered at its timeout');
      }
    });

    test('a woken pop that cannot take the work hands the wake-up on', async () => {
      const queue = queueName('handoff');
      // Oldest first: a pop bound to another partition, then a pop on any partition. The push
      // wakes the oldest, which cannot take the message and passes the wake-up on.
      const bound = api.popPartition(queue, 'elsewhere', `wait=true&timeout=${TIMEOUT_MS}`);
      await parked(1);
      const any = api.pop(queue, `wait=true&timeout=${TIMEOUT_MS}`);
      await parked(2);
      const started = Date.now();
      await api.push([{ queue, partition: 'here', payload: 'for any' }]);
      const reply = await any;
      assert.equal(reply.status, 200);
      assert.equal(reply.body.messages[0].data, 'for any');
      assert.ok(Date.now() - started < TIMEOUT_MS, 'handed on at once, not at a timeout');
      assert.equal((await bound).status, 204);
    });
  });
}

/*
 * A crashed transaction leaves nothing visible (docs/broker-topologies.md "Redis topologies",
 * "Transactions"): broker nodes run transactions (push two messages to a sink queue, ack the
 * source message) while one node is killed with SIGKILL mid-stream. Afterwards every source
 * message is either acked with both of its sink messages stored, or not acked with neither:
 * never one without the others. The nodes run with Redis Cluster's rules (one slot per call,
 * slots grouped by namespace), so the transaction is the one atomic script it is on Cluster.
 */
import assert from 'node:assert/strict';
import { EventEmitter, once } from 'node:events';
import { after, test } from 'node:test';
import { stopTestRedis, testRedisUrl, uniquePrefix } from '@herald/testkit';
import { BrokerNode, call } from './nodes.js';

const MESSAGES = 300;
/** Transactions answered before the kill: the kill lands while others are in flight. */
const COMMITTED_BEFORE_KILL = 40;
const WORKERS = 6;

after(() => stopTestRedis());

test('a broker node killed mid-transaction leaves each transaction whole or absent', {
  timeout: 120_000,
}, async () => {
  const environment = {
    REDIS_URL: await testRedisUrl(),
    BROKER_KEY_PREFIX: uniquePrefix('crash'),
    BROKER_REDIS_ONE_SLOT: 'true',
    BROKER_REDIS_SLOT_GROUP: 'namespace',
  };
  const source = 'crash.source';
  const sink = 'crash.sink';
  const victim = await BrokerNode.start(environment);
  const pushed = await call(victim.url, 'POST', '/api/v1/push', {
    items: Array.from({ length: MESSAGES }, (_, index) => ({
      queue: source,
      payload: index,
      transactionId: `m${index}`,
    })),
  });
  assert.equal(pushed.status, 201);

  const committed = new Set<string>();
  const progress = new EventEmitter();
  let running = true;
  async function worker(): Promise<void> {
    while (running) {
      try {
        const popped = await call(victim.url, 'GET', `/api/v1/pop/queue/${source}`);
        if (popped.status !== 200) return;
        const message = popped.body.messages[0];
        const reply = await call(victim.url, 'POST', '/api/v1/transaction', {
          operations: [
            {
              type: 'push',
              items: [
                { queue: sink, payload: 'a', transactionId: `${message.transactionId}-a` },
                { queue: sink, payload: 'b', transactionId: `${message.transactionId}-b` },
              ],
            },
            {
              type: 'ack',
              transactionId: message.transactionId,
              partitionId: message.partitionId,
              leaseId: message.leaseId,
              status: 'completed',
            },
          ],
        });
        assert.equal(reply.body.success, true, reply.body.error);
        committed.add(message.transactionId);
        progress.emit('committed');
      } catch (error) {
        if (running) throw error;
        return; // The node was killed under this request: no answer, nothing promised.
      }
    }
  }
  const workers = Array.from({ length: WORKERS }, () => worker());
  while (committed.size < COMMITTED_BEFORE_KILL) await once(progress, 'committed');
  running = false;
  victim.child.kill('SIGKILL');
  await once(victim.child, 'exit');
  await Promise.all(workers);

  const survivor = await BrokerNode.start(environment);
  try {
    const states = await call<{ transactionId: string; status: string }[]>(
      survivor.url,
      'GET',
      `/api/v1/status/queues/${source}/messages?limit=${MESSAGES}`,
    );
    assert.equal(states.status, 200);
    assert.equal(states.body.length, MESSAGES);
    const listed = await call<{ messages: { transactionId: string }[] }>(
      survivor.url,
      'GET',
      `/api/v1/messages?queue=${sink}&limit=1000`,
    );
    const stored = new Set(listed.body.messages.map((message) => message.transactionId));
    let acked = 0;
    for (const { transactionId, status } of states.body) {
      const done = status === 'completed';
      if (done) acked++;
      assert.equal(stored.has(`${transactionId}-a`), done, `${transactionId} (${status}): first push`);
      assert.equal(stored.has(`${transactionId}-b`), done, `${transactionId} (${status}): second push`);
    }
    // Every transaction answered as committed is there; others may have committed unanswered.
    for (const transactionId of committed) {
      assert.equal(states.body.find((state) => state.transactionId === transactionId)?.status, 'completed');
    }
    assert.ok(acked >= committed.size);
    assert.equal(stored.size, 2 * acked);
  } finally {
    await survivor.stop();
  }
});

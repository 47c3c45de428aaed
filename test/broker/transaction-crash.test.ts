/*
 * A crashed transaction leaves nothing visible (docs/broker-topologies.md "Redis topologies",
 * "Transactions"; docs/broker-outbox.md, "Transactions across slots"): broker nodes run
 * transactions (push two sink messages, ack the source message) while the node is killed with
 * SIGKILL mid-stream. Afterwards every source message is either acked with both of its sink
 * messages stored, or not acked with neither: never one without the others.
 * - Within one slot (Redis Cluster's rules on standalone, slots grouped by namespace): the
 *   transaction is one atomic script.
 * - On a 3-primary Cluster without slot grouping, the source and the two sinks in three slots:
 *   each transaction is prepared, committed and applied in steps, and the node dies between any
 *   of them; the next node's recovery aborts what did not commit and applies what did.
 */
import assert from 'node:assert/strict';
import { EventEmitter, once } from 'node:events';
import { after, test } from 'node:test';
import { createRedis, type RedisTopology, redisTopologyFromEnv } from '@herald/redis';
import { keySlot, RedisCluster, stopTestRedis, testRedisUrl, uniquePrefix, waitFor } from '@herald/testkit';
import { BrokerNode, call } from './nodes.js';

const MESSAGES = 300;
/** Transactions answered before the kill: the kill lands while others are in flight. */
const COMMITTED_BEFORE_KILL = 40;
const WORKERS = 6;

after(() => stopTestRedis());

/**
 * Pushes MESSAGES to the source, then WORKERS run transactions (push `<id>-a` to `sinks[0]`,
 * `<id>-b` to `sinks[1]`, ack the source message) on one node, killed with SIGKILL once
 * COMMITTED_BEFORE_KILL answered. A second node then finds each source message acked with both
 * sink messages stored, or not acked with neither (after `settled`: recovery's work done).
 */
async function crashMidTransactions(
  environment: Record<string, string>,
  source: string,
  sinks: readonly [string, string],
  settled: (survivor: BrokerNode) => Promise<void> = async () => undefined,
): Promise<void> {
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
                { queue: sinks[0], payload: 'a', transactionId: `${message.transactionId}-a` },
                { queue: sinks[1], payload: 'b', transactionId: `${message.transactionId}-b` },
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
    await settled(survivor);
    const states = await call<{ transactionId: string; status: string }[]>(
      survivor.url,
      'GET',
      `/api/v1/status/queues/${source}/messages?limit=${MESSAGES}`,
    );
    assert.equal(states.status, 200);
    assert.equal(states.body.length, MESSAGES);
    const storedIn = async (sink: string) => {
      const listed = await call<{ messages: { transactionId: string }[] }>(
        survivor.url,
        'GET',
        `/api/v1/messages?queue=${sink}&limit=1000`,
      );
      return listed.body.messages.map((message) => message.transactionId);
    };
    const stored = new Set([
      ...(await storedIn(sinks[0])),
      ...(sinks[1] === sinks[0] ? [] : await storedIn(sinks[1])),
    ]);
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
}

test('a broker node killed mid-transaction leaves each transaction whole or absent', {
  timeout: 120_000,
}, async () => {
  await crashMidTransactions(
    {
      REDIS_URL: await testRedisUrl(),
      BROKER_KEY_PREFIX: uniquePrefix('crash'),
      BROKER_REDIS_ONE_SLOT: 'true',
      BROKER_REDIS_SLOT_GROUP: 'namespace',
    },
    'crash.source',
    ['crash.sink', 'crash.sink'],
  );
});

test('on a 3-primary Cluster without slot grouping, transactions across slots killed mid-way end whole or absent once recovered', {
  timeout: 180_000,
}, async () => {
  const cluster = await RedisCluster.start({ primaries: 3, replicasPerPrimary: 0 });
  const prefix = uniquePrefix('crash-xslot');
  const redis = createRedis({
    topology: redisTopologyFromEnv({ REDIS_CLUSTER_NODES: cluster.nodes.join(',') }) as RedisTopology,
    connectionName: 'crash-test',
  });
  try {
    // Three queues, three slots (checked): every transaction has two shares besides its commit.
    const [source, sinkA, sinkB] = threeSlots();
    await crashMidTransactions(
      {
        REDIS_CLUSTER_NODES: cluster.nodes.join(','),
        BROKER_KEY_PREFIX: prefix,
        BROKER_TRANSACTION_RECOVERY_AFTER: '1000',
      },
      source,
      [sinkA, sinkB],
      // Recovery decided every transaction the killed node left recorded, and the relays
      // applied every committed one's shares (its outbox empty).
      async () => {
        await waitFor(async () => (await redis.zcard(`${prefix}{txn}:pending`)) === 0, {
          what: 'every recorded transaction decided',
          timeoutMs: 30_000,
        });
        await waitFor(async () => (await redis.xlen(`${prefix}{${encodeURIComponent(source)}}:ob`)) === 0, {
          what: "the coordinator's apply intents relayed",
          timeoutMs: 30_000,
        });
      },
    );
  } finally {
    redis.disconnect();
    await cluster.stop();
  }
});

/** A source and two sink queue names whose hash tags fall in three different Cluster slots. */
function threeSlots(): [string, string, string] {
  const names: string[] = [];
  const slots = new Set<number>();
  for (let index = 0; names.length < 3; index++) {
    const name = `xslot.${['source', 'sink-a', 'sink-b'][names.length]}.${index}`;
    const slot = keySlot(`{${encodeURIComponent(name)}}`);
    if (slots.has(slot)) continue;
    slots.add(slot);
    names.push(name);
  }
  return names as [string, string, string];
}

/*
 * Transactions across Redis Cluster slots (issue #25 item 3; docs/broker-outbox.md,
 * "Transactions across slots"): every operation applies or none does, as seen by any later
 * request, without grouping queues into one slot. Run on a private 3-primary Cluster started
 * without any slot grouping setting, and on standalone Redis with Cluster's one-slot rule
 * (BROKER_REDIS_ONE_SLOT). The crash windows are driven by running the steps' scripts by hand:
 * a share prepared and never committed is aborted by recovery (and a late commit refused); a
 * commit whose node died before applying the other shares is applied by recovery.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { createRedis, type RedisClient, redisTopologyFromEnv, runScript } from '@herald/redis';
import { RedisCluster, RedisServer, uniquePrefix, waitFor } from '@herald/testkit';
import { namespaceAndTask, partitionIdOf } from '../src/identifiers.js';
import type { Broker } from '../src/index.js';
import { loadBrokerScripts } from '../src/scripts.js';
import { type BrokerClient, client, queueName, startTestBroker } from './helpers.js';

const scripts = loadBrokerScripts();
function script(name: string) {
  const found = scripts.get(name);
  if (!found) throw new Error(`no script ${name}`);
  return found;
}

interface Popped {
  transactionId: string;
  partitionId: string;
  leaseId: string;
  data: unknown;
}

async function popOne(api: BrokerClient, queue: string): Promise<Popped> {
  const reply = await api.pop(queue);
  assert.equal(reply.status, 200, `pop ${queue}`);
  return reply.body.messages[0];
}

const pick = (message: Popped) => ({
  transactionId: message.transactionId,
  partitionId: message.partitionId,
  leaseId: message.leaseId,
});

interface Where {
  readonly name: string;
  start(): Promise<{ environment: Record<string, string>; stop(): Promise<void> }>;
}

const PLACES: Where[] = [
  {
    name: 'a 3-primary Redis Cluster, no slot grouping',
    async start() {
      const cluster = await RedisCluster.start({ primaries: 3, replicasPerPrimary: 0 });
      return {
        environment: { REDIS_CLUSTER_NODES: cluster.nodes.join(',') },
        stop: () => cluster.stop(),
      };
    },
  },
  {
    name: 'standalone Redis with the one-slot rule (BROKER_REDIS_ONE_SLOT)',
    async start() {
      const server = await RedisServer.start();
      return {
        environment: { REDIS_URL: server.url, BROKER_REDIS_ONE_SLOT: 'true' },
        stop: () => server.destroy(),
      };
    },
  },
];

for (const place of PLACES)
  describe(`transactions across slots on ${place.name}`, () => {
    const prefix = uniquePrefix('xslot');
    let broker: Broker;
    let api: BrokerClient;
    let redis: RedisClient;
    let stop: () => Promise<void>;
    const base = (queue: string) => `${prefix}{${encodeURIComponent(queue)}}:`;
    /** Room held for prepared pushes in a queue (stats txpush). */
    const held = async (queue: string) => Number((await redis.hget(`${base(queue)}stats`, 'txpush')) ?? 0);

    before(async () => {
      const started = await place.start();
      stop = started.stop;
      const topology = redisTopologyFromEnv(started.environment);
      assert.ok(topology);
      redis = createRedis({ topology, connectionName: 'xslot-test' });
      broker = await startTestBroker('redis', {
        ...started.environment,
        BROKER_KEY_PREFIX: prefix,
        BROKER_TRANSACTION_RECOVERY_AFTER: '300',
      });
      api = client(broker.url);
    });
    after(async () => {
      await broker.close();
      redis.disconnect();
      await stop();
    });

    /** Two queues (their own hash tags: other slots), with a message leased from the first. */
    async function sourceAndTarget() {
      const source = queueName('xs-src');
      const target = queueName('xs-dst');
      await api.push([{ queue: source, payload: 'in', transactionId: 's1' }]);
      return { source, target, popped: await popOne(api, source) };
    }

    test('an ack in one slot and a push in another commit together', async () => {
      const { target, popped } = await sourceAndTarget();
      const committed = await api.call('POST', '/api/v1/transaction', {
        operations: [
          { type: 'ack', ...pick(popped), status: 'completed' },
          { type: 'push', items: [{ queue: target, payload: 'out', transactionId: 'o1' }] },
        ],
      });
      assert.equal(committed.status, 200);
      assert.equal(committed.body.success, true, committed.body.error);
      assert.equal(committed.body.results[1].status, 'queued');
      // Applied before the answer: the next request sees both.
      assert.equal((await popOne(api, target)).data, 'out');
      const again = await api.ack({ ...pick(popped), status: 'completed' });
      assert.equal(again.body[0].repeat, true, 'the ack was applied by the transaction');
      assert.equal(await held(target), 0);
    });

    test('a refusal in a share applies nothing anywhere', async () => {
      const { source, target, popped } = await sourceAndTarget();
      const refused = await api.call('POST', '/api/v1/transaction', {
        operations: [
          { type: 'push', items: [{ queue: target, payload: 'out', transactionId: 'o1' }] },
          { type: 'ack', ...pick(popped), leaseId: 'not-the-lease', status: 'completed' },
        ],
      });
      assert.equal(refused.body.success, false);
      assert.match(refused.body.error, /Invalid or expired lease \(operation 1\)/);
      assert.equal((await api.pop(target)).status, 204, 'the push was not applied');
      assert.equal(await held(target), 0);
      const acked = await api.ack({ ...pick(popped), status: 'completed' });
      assert.equal(acked.body[0].success, true);
      assert.equal(acked.body[0].repeat, false, 'the ack was not applied');
      assert.ok(source);
    });

    test('a refusal at the commit releases the shares prepared before it', async () => {
      const { target, popped } = await sourceAndTarget();
      // The first queue's slot commits: its ack is refused after the target's share was prepared.
      const refused = await api.call('POST', '/api/v1/transaction', {
        operations: [
          { type: 'ack', ...pick(popped), leaseId: 'not-the-lease', status: 'completed' },
          { type: 'push', items: [{ queue: target, payload: 'out', transactionId: 'o1' }] },
        ],
      });
      assert.equal(refused.body.success, false);
      assert.match(refused.body.error, /operation 0/);
      assert.equal((await api.pop(target)).status, 204);
      assert.equal(await held(target), 0, 'the room the prepare held is given back');
      assert.equal((await api.ack({ ...pick(popped), status: 'completed' })).body[0].repeat, false);
    });

    test('a full queue in a share refuses the transaction; a prepared share holds its room until aborted', async () => {
      const { target, popped } = await sourceAndTarget();
      await api.configure(target, { maxSize: 1 });
      await api.push([{ queue: target, payload: 'first', transactionId: 'f1' }]);
      const refused = await api.call('POST', '/api/v1/transaction', {
        operations: [
          { type: 'ack', ...pick(popped), status: 'completed' },
          { type: 'push', items: [{ queue: target, payload: 'out', transactionId: 'o1' }] },
        ],
      });
      assert.equal(refused.body.success, false);
      assert.match(refused.body.error, /Queue is full/);
      assert.equal((await api.ack({ ...pick(popped), status: 'completed' })).body[0].repeat, false);
      // Room for one more, held by a share prepared meanwhile: a plain push finds the queue full
      // until the share is aborted.
      await api.configure(target, { maxSize: 2 });
      const txid = `room-${queueName('t')}`;
      assert.deepEqual(
        await runScript(
          redis,
          script('txn-prepare'),
          [base(target)],
          [txid, Date.now() + 60_000, ...pushOperation(target, 'held', 'h1', `m-${txid}`)],
        ),
        ['OK'],
      );
      assert.equal(await held(target), 1);
      const full = await api.push([{ queue: target, payload: 'second', transactionId: 'f2' }]);
      assert.ok(full.status >= 400 && full.status < 500, `a full queue: ${full.status}`);
      assert.equal(await runScript(redis, script('txn-abort'), [base(target)], [txid, 120]), 'prepared');
      assert.equal(await held(target), 0);
      assert.equal((await api.push([{ queue: target, payload: 'second', transactionId: 'f2' }])).status, 201);
    });

    /** The ARGV of a push operation of `queue` at key index 1 (includes/transaction-read.lua). */
    function pushOperation(
      queue: string,
      payload: string,
      transactionId: string,
      messageId: string,
    ): string[] {
      const { namespace, task } = namespaceAndTask(queue);
      return [
        'push',
        '1',
        namespace,
        task,
        'Default',
        partitionIdOf(queue, 'Default'),
        transactionId,
        messageId,
        '',
        JSON.stringify(payload),
        '',
      ];
    }

    /**
     * The commit a node runs (transaction-1.lua): the coordinator `source` acks `popped`, the
     * share in `target`'s slot was prepared.
     */
    function commitByHand(txid: string, source: string, target: string, popped: Popped): Promise<unknown[]> {
      return runScript<unknown[]>(
        redis,
        script('transaction'),
        [base(source)],
        [
          txid,
          JSON.stringify([[target]]),
          '120',
          'ack',
          '1',
          encodeURIComponent('Default'),
          encodeURIComponent('__QUEUE_MODE__'),
          popped.transactionId,
          'completed',
          popped.leaseId,
          '',
        ],
      );
    }

    /**
     * Records a transaction as the committing node does first (redis/transactions.ts), with its
     * deadline (recovery decides it once past).
     */
    async function record(txid: string, coordinator: string, share: string, deadline: number): Promise<void> {
      const records = `${prefix}{txn}:records`;
      await redis.hset(records, txid, JSON.stringify({ coordinator: [coordinator], shares: [[share]] }));
      await redis.zadd(`${prefix}{txn}:pending`, deadline, txid);
    }

    test('recovery aborts a share prepared by a node that died before the commit; a late commit is refused', async () => {
      const { source, target, popped } = await sourceAndTarget();
      const txid = `dead-${queueName('t')}`;
      await record(txid, source, target, Date.now());
      const prepared = await runScript<unknown[]>(
        redis,
        script('txn-prepare'),
        [base(target)],
        [txid, Date.now() + 60_000, ...pushOperation(target, 'orphan', 'o1', `m-${txid}`)],
      );
      assert.deepEqual(prepared, ['OK']);
      assert.equal(await held(target), 1);
      await waitFor(async () => (await held(target)) === 0, { what: 'recovery to release the share' });
      assert.equal(await redis.hget(`${base(target)}txp:${txid}`, 'state'), 'aborted');
      const late = await commitByHand(txid, source, target, popped);
      assert.equal(late[0], 'FAIL');
      assert.match(String(late[2]), /timed out/);
      assert.equal((await api.pop(target)).status, 204);
      assert.equal((await api.ack({ ...pick(popped), status: 'completed' })).body[0].repeat, false);
    });

    test('recovery applies the shares of a transaction whose node died after the commit', async () => {
      const { source, target, popped } = await sourceAndTarget();
      const txid = `committed-${queueName('t')}`;
      // Not due before the commit below ran (recovery would abort it first).
      await record(txid, source, target, Date.now() + 600_000);
      await runScript(
        redis,
        script('txn-prepare'),
        [base(target)],
        [txid, Date.now() + 60_000, ...pushOperation(target, 'survivor', 'o1', `m-${txid}`)],
      );
      const committed = await commitByHand(txid, source, target, popped);
      assert.equal(committed[0], 'OK');
      // Committed, not yet applied: the source's ack is visible, the target's push not yet.
      assert.equal((await api.pop(target)).status, 204);
      // The node died: its deadline passes.
      await redis.zadd(`${prefix}{txn}:pending`, Date.now(), txid);
      await waitFor(async () => (await api.pop(target, 'batch=1')).status === 200, {
        what: 'recovery to apply the share',
      });
      assert.equal(await held(target), 0);
      assert.equal(await redis.hget(`${base(target)}txp:${txid}`, 'state'), 'applied');
      assert.equal((await api.ack({ ...pick(popped), status: 'completed' })).body[0].repeat, true);
      assert.equal(await redis.zscore(`${prefix}{txn}:pending`, txid), null, 'the record is forgotten');
    });
  });

/*
 * Transactions across Redis Cluster slots (issue #25 item 3; docs/broker-outbox.md,
 * "Transactions across slots"): every operation applies or none does, as seen by any later
 * request, without grouping queues into one slot. Run on a private 3-primary Cluster started
 * without any slot grouping setting, and on standalone Redis with Cluster's one-slot rule
 * (BROKER_REDIS_ONE_SLOT). The crash windows are driven by running the steps' scripts by hand:
 * a share prepared and never committed is aborted by recovery (and a late commit refused); a
 * commit whose node died before applying the other shares is applied by recovery. A streams
 * cycle pushing to sinks in other slots commits the same way (state, source ack and home-slot
 * pushes in the state's slot; the other sinks as shares).
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { createRedis, type RedisClient, redisTopologyFromEnv, runScript } from '@herald/redis';
import { RedisCluster, RedisServer, uniquePrefix, waitFor } from '@herald/testkit';
import { namespaceAndTask, partitionIdOf } from '../src/identifiers.js';
import type { Broker } from '../src/index.js';
import { pushItemArguments } from '../src/redis/transactions.js';
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
      const item = {
        queue,
        partition: 'Default',
        transactionId,
        messageId,
        traceId: null,
        data: JSON.stringify(payload),
        producerSub: null,
      };
      return [
        'push',
        '1',
        namespace,
        task,
        ...pushItemArguments(item, partitionIdOf(queue, 'Default'), true),
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

    /** A streams query over a fresh source queue holding one message, leased to the query's group. */
    async function streamsQuery() {
      const source = queueName('xs-st-src');
      const registered = await api.call('POST', '/streams/v1/queries', {
        name: queueName('xs-st-q'),
        source_queue: source,
        sink_queue: queueName('xs-st-sink'),
        config_hash: 'h1',
      });
      assert.equal(registered.status, 200, JSON.stringify(registered.body));
      const group = `streams.${registered.body.name}`;
      await api.push([{ queue: source, payload: 'in', transactionId: 's1' }]);
      const leased = (await api.pop(source, `consumerGroup=${encodeURIComponent(group)}`)).body.messages[0];
      assert.ok(leased, 'a message leased to the query group');
      const queryId = registered.body.query_id as string;
      const cycle = (body: Record<string, unknown>) =>
        api.call('POST', '/streams/v1/cycle', {
          query_id: queryId,
          partition_id: leased.partitionId,
          consumer_group: group,
          ...body,
        });
      const state = async () =>
        (
          await api.call('POST', '/streams/v1/state/get', {
            query_id: queryId,
            partition_id: leased.partitionId,
          })
        ).body.rows.map((row: { key: string }) => row.key);
      const ack = (leaseId: string = leased.leaseId) => ({
        transactionId: leased.transactionId,
        leaseId,
        status: 'completed',
        count: 1,
      });
      /** Whether the group's message is still to be resolved (its ack not applied). */
      const unacked = async () => {
        const { transactionId, partitionId } = leased;
        const reply = await api.ack({
          transactionId,
          partitionId,
          consumerGroup: group,
          status: 'completed',
        });
        assert.equal(reply.body[0].success, true, JSON.stringify(reply.body));
        return reply.body[0].repeat === false;
      };
      return { source, group, queryId, leased, cycle, state, ack, unacked };
    }

    const pending = () => redis.zcard(`${prefix}{txn}:pending`);

    test('a streams cycle commits its state, its source ack and pushes to sinks in two other slots together', async () => {
      const query = await streamsQuery();
      const [b, c] = [queueName('xs-st-b'), queueName('xs-st-c')];
      const reply = await query.cycle({
        state_ops: [{ type: 'upsert', key: 'k', value: 1 }],
        push_items: [
          { queue: b, payload: 'to-b', transactionId: 'ob' },
          { queue: query.source, payload: 'home', transactionId: 'oh' },
          { queue: c, payload: 'to-c', transactionId: 'oc' },
        ],
        ack: query.ack(),
      });
      assert.equal(reply.body.success, true, JSON.stringify(reply.body));
      assert.deepEqual(
        reply.body.push_results.map((result: { status: string; transaction_id: string }) => [
          result.status,
          result.transaction_id,
        ]),
        [
          ['queued', 'ob'],
          ['queued', 'oh'],
          ['queued', 'oc'],
        ],
      );
      assert.equal(reply.body.ack_result.lease_released, true);
      // Applied before the answer: the next request sees every part.
      assert.equal((await popOne(api, b)).data, 'to-b');
      assert.equal((await popOne(api, c)).data, 'to-c');
      assert.deepEqual(await query.state(), ['k']);
      assert.equal(await query.unacked(), false, 'the source ack was applied');
      assert.deepEqual([await held(b), await held(c), await pending()], [0, 0, 0]);
    });

    test('a full sink in another slot refuses the cycle: no state, no ack, no push anywhere', async () => {
      const query = await streamsQuery();
      const [full, other] = [queueName('xs-st-full'), queueName('xs-st-other')];
      await api.configure(full, { maxSize: 1 });
      await api.push([{ queue: full, payload: 'first', transactionId: 'f1' }]);
      const refused = await query.cycle({
        state_ops: [{ type: 'upsert', key: 'k', value: 1 }],
        push_items: [
          { queue: other, payload: 'out', transactionId: 'o1' },
          { queue: full, payload: 'out', transactionId: 'o2' },
        ],
        ack: query.ack(),
      });
      assert.equal(refused.body.success, false);
      assert.match(refused.body.error, /Queue is full \(maxSize 1\)/);
      assert.deepEqual(await query.state(), []);
      assert.equal((await api.pop(other)).status, 204);
      assert.deepEqual([await held(full), await held(other), await pending()], [0, 0, 0]);
      // The lease still holds: the cycle without the full sink goes through.
      const ok = await query.cycle({
        state_ops: [{ type: 'upsert', key: 'k', value: 1 }],
        push_items: [{ queue: other, payload: 'out', transactionId: 'o1' }],
        ack: query.ack(),
      });
      assert.equal(ok.body.success, true, JSON.stringify(ok.body));
      assert.equal((await popOne(api, other)).data, 'out');
    });

    test("a refusal in the state's slot (an invalid lease) releases the sinks' shares", async () => {
      const query = await streamsQuery();
      const sink = queueName('xs-st-sink');
      const refused = await query.cycle({
        state_ops: [{ type: 'upsert', key: 'k', value: 1 }],
        push_items: [{ queue: sink, payload: 'out', transactionId: 'o1' }],
        ack: query.ack('not-the-lease'),
      });
      assert.equal(refused.body.success, false);
      assert.match(refused.body.error, /Invalid or expired lease/);
      assert.equal((await api.pop(sink)).status, 204);
      assert.deepEqual([await held(sink), await pending()], [0, 0]);
      assert.deepEqual(await query.state(), []);
      assert.equal(await query.unacked(), true);
    });

    test('a retried cycle across slots (same body) applies once and answers the first result', async () => {
      const query = await streamsQuery();
      const sink = queueName('xs-st-sink');
      const body = {
        state_ops: [{ type: 'upsert', key: 'k', value: 1 }],
        push_items: [{ queue: sink, payload: 'out' }],
        ack: query.ack(),
      };
      const first = await query.cycle(body);
      assert.equal(first.body.success, true, JSON.stringify(first.body));
      const second = await query.cycle(body);
      assert.deepEqual(second.body, first.body);
      assert.equal((await api.pop(sink, 'batch=10')).body.messages.length, 1, 'one sink message');
      assert.deepEqual([await held(sink), await pending()], [0, 0]);
    });

    test('recovery applies the sink shares of a cycle whose node died after it committed', async () => {
      const query = await streamsQuery();
      const sink = queueName('xs-st-sink');
      const txid = `cycle-${queueName('t')}`;
      await record(txid, query.source, sink, Date.now() + 600_000);
      await runScript(
        redis,
        script('txn-prepare'),
        [base(sink)],
        [txid, Date.now() + 60_000, ...pushOperation(sink, 'survivor', 'o1', `m-${txid}`)],
      );
      // The cycle a node runs (lua/streams-cycle-2.lua) in the state's slot: its home queue (the
      // source) holds the decision and the apply intent.
      const queryBase = `${base(query.source)}~streams:${query.queryId}:`;
      const answer = JSON.parse(
        await runScript<string>(
          redis,
          // The file name's 2 is the least number of keys: this call declares one queue more.
          { ...script('streams-cycle'), numberOfKeys: 3 },
          [queryBase, `${queryBase}stats`, base(query.source)],
          [
            ...[`cycle-${txid}`, query.queryId, 0, query.leased.partitionId, 60, 1000, 1_000_000],
            ...[1, 'u', 'k', '1'], // one state op
            0, // no push in this slot
            '0', // no ack
            ...['1', txid, JSON.stringify([[sink]]), 120, 3], // the share; the home queue is KEYS[3]
          ],
        ),
      );
      assert.equal(answer.ok, true, JSON.stringify(answer));
      assert.deepEqual(await query.state(), ['k']);
      assert.equal((await api.pop(sink)).status, 204, 'committed, not yet applied');
      // The node died: its deadline passes.
      await redis.zadd(`${prefix}{txn}:pending`, Date.now(), txid);
      await waitFor(async () => (await api.pop(sink, 'batch=1')).status === 200, {
        what: 'recovery to apply the share',
      });
      assert.equal(await redis.hget(`${base(sink)}txp:${txid}`, 'state'), 'applied');
      assert.deepEqual([await held(sink), await pending()], [0, 0]);
    });
  });

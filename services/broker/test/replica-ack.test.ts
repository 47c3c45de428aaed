/*
 * BROKER_MIN_REPLICAS_ACK (issue #12, item 4; docs/broker-topologies.md, "Replica acknowledgement"): a
 * state-changing request answers only once enough replicas confirmed its write (Redis WAIT on the
 * connection and, on Cluster, the shard that wrote); else 503 with the write applied on the
 * primary, and a retry is safe. Replicas are paused with SIGSTOP to hold their confirmation back.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { ConfigError, parseEnv } from '@herald/config';
import { RedisCluster, RedisSentinelSet, uniquePrefix } from '@herald/testkit';
import { type Broker, brokerSpec } from '../src/index.js';
import { type BrokerClient, client, queueName, startTestBroker } from './helpers.js';

/**
 * WAIT's timeout in these tests: a paused replica is given this long to confirm, and a running
 * one must confirm within it. Generous, since a running replica's confirmation must never miss
 * it: at 300 ms one on Redis Cluster did, with three test files sharing the machine's two cores.
 */
const TIMEOUT = '2000';
const REFUSAL = new RegExp(
  `Written on the Redis primary, but 0 of the 1 required replicas confirmed it within ${TIMEOUT} ms`,
);

interface Popped {
  readonly transactionId: string;
  readonly partitionId: string;
  readonly leaseId: string;
}
const pick = ({ transactionId, partitionId, leaseId }: Popped) => ({ transactionId, partitionId, leaseId });

const item = (queue: string, transactionId: string) => ({
  queue,
  partition: 'p',
  transactionId,
  payload: { transactionId },
});

test('BROKER_MIN_REPLICAS_ACK is refused at boot without Redis, and when not a count', async () => {
  await assert.rejects(startTestBroker('memory', { BROKER_MIN_REPLICAS_ACK: '1' }), (error: unknown) => {
    assert.ok(error instanceof ConfigError);
    assert.equal(error.variable, 'BROKER_MIN_REPLICAS_ACK');
    return true;
  });
  for (const [variable, value] of [
    ['BROKER_MIN_REPLICAS_ACK', '-1'],
    ['BROKER_MIN_REPLICAS_ACK', 'one'],
    ['BROKER_MIN_REPLICAS_ACK_TIMEOUT', '0'],
  ] as const) {
    assert.throws(
      () => parseEnv(brokerSpec, { [variable]: value }),
      (error: unknown) => {
        assert.ok(error instanceof ConfigError, `${variable}=${value}`);
        assert.equal(error.variable, variable);
        return true;
      },
    );
  }
});

describe('BROKER_MIN_REPLICAS_ACK on Sentinel', () => {
  let set: RedisSentinelSet;
  const nodes: Broker[] = [];
  let one: BrokerClient;
  let two: BrokerClient;
  before(async () => {
    set = await RedisSentinelSet.start({ replicas: 2 });
    const environment = {
      REDIS_SENTINELS: set.sentinels.join(','),
      REDIS_SENTINEL_MASTER: set.masterName,
      BROKER_MIN_REPLICAS_ACK_TIMEOUT: TIMEOUT,
      // Two nodes of one deployment, differing only in how many replicas they require.
      BROKER_KEY_PREFIX: uniquePrefix('replica-ack'),
    };
    nodes.push(await startTestBroker('redis', { ...environment, BROKER_MIN_REPLICAS_ACK: '1' }));
    nodes.push(await startTestBroker('redis', { ...environment, BROKER_MIN_REPLICAS_ACK: '2' }));
    one = client((nodes[0] as Broker).url);
    two = client((nodes[1] as Broker).url);
  });
  after(async () => {
    for (const node of nodes) await node.close();
    await set.stop();
  });

  const replicaPorts = async () => {
    const primary = await set.primary();
    return set.serverPorts.filter((port) => port !== primary);
  };

  test('with every replica up, every state-changing request answers as without it', async () => {
    const queue = queueName('up');
    assert.equal((await two.configure(queue, { leaseTime: 30 })).status, 200);
    assert.equal((await two.push([item(queue, 'a')])).status, 201);
    const popped = await one.pop(queue);
    assert.equal(popped.status, 200);
    const [message] = (popped.body as { messages: Popped[] }).messages;
    assert.ok(message);
    const acked = await two.ack({ ...pick(message), status: 'completed' });
    assert.equal(acked.status, 200);
    assert.equal((acked.body as { success: boolean }[])[0]?.success, true);
  });

  test('with fewer replicas than required, a push is 503 but applied, and its retry is a duplicate', async () => {
    const queue = queueName('paused');
    const [paused, running] = (await replicaPorts()) as [number, number];
    await set.kill(paused, 'SIGSTOP');
    try {
      // One replica of two confirms: enough for 1, not for 2.
      assert.equal((await one.push([item(queue, 'first')])).status, 201);
      const refused = await two.push([item(queue, 'second')]);
      assert.equal(refused.status, 503);
      assert.match((refused.body as { error: string }).error, /but 1 of the 2 required replicas/);
    } finally {
      await set.kill(paused, 'SIGCONT');
    }
    await set.kill(running, 'SIGSTOP');
    await set.kill(paused, 'SIGSTOP');
    let refused: Awaited<ReturnType<BrokerClient['push']>>;
    try {
      refused = await one.push([item(queue, 'third')]);
    } finally {
      await set.kill(running, 'SIGCONT');
      await set.kill(paused, 'SIGCONT');
    }
    assert.equal(refused.status, 503);
    assert.match((refused.body as { error: string }).error, REFUSAL);
    // Applied on the primary: the retry dedups, and answers 201 once the replicas have it.
    const retried = await one.push([item(queue, 'third')]);
    assert.equal(retried.status, 201);
    assert.equal((retried.body as { status: string }[])[0]?.status, 'duplicate');
    const retriedSecond = await two.push([item(queue, 'second')]);
    assert.equal(retriedSecond.status, 201);
    assert.equal((retriedSecond.body as { status: string }[])[0]?.status, 'duplicate');
  });

  test('configure, ack and a transaction wait for the replicas too', async () => {
    const queue = queueName('writes');
    assert.equal((await one.push([item(queue, 'x'), item(queue, 'y')])).status, 201);
    const popped = await one.pop(queue, 'batch=2');
    const [first, second] = (popped.body as { messages: Popped[] }).messages.map(pick);
    assert.ok(first && second);
    const ports = await replicaPorts();
    for (const port of ports) await set.kill(port, 'SIGSTOP');
    const answers: number[] = [];
    try {
      answers.push((await one.configure(queue, { retryLimit: 5 })).status);
      answers.push((await one.ack({ ...first, status: 'completed' })).status);
      answers.push(
        (
          await one.call('POST', '/api/v1/transaction', {
            operations: [{ type: 'push', items: [item(queue, 'z')] }],
          })
        ).status,
      );
    } finally {
      for (const port of ports) await set.kill(port, 'SIGCONT');
    }
    assert.deepEqual(answers, [503, 503, 503]);
    // Each was applied on the primary: the ack repeats, the transaction's push is a duplicate.
    const ack = await one.ack({ ...first, status: 'completed' });
    assert.equal(ack.status, 200);
    assert.equal((ack.body as { repeat?: boolean }[])[0]?.repeat, true);
    const retry = await one.push([item(queue, 'z')]);
    assert.equal((retry.body as { status: string }[])[0]?.status, 'duplicate');
    // Configuring nothing more answers the options stored: the refused configure's among them.
    const configured = await one.configure(queue, {});
    assert.equal((configured.body as { options: { retryLimit: number } }).options.retryLimit, 5);
  });
});

describe('BROKER_MIN_REPLICAS_ACK on Redis Cluster', () => {
  let cluster: RedisCluster;
  let broker: Broker;
  let api: BrokerClient;
  const prefix = uniquePrefix('replica-ack');
  before(async () => {
    cluster = await RedisCluster.start();
    broker = await startTestBroker('redis', {
      REDIS_CLUSTER_NODES: cluster.nodes.join(','),
      BROKER_KEY_PREFIX: prefix,
      BROKER_MIN_REPLICAS_ACK: '1',
      BROKER_MIN_REPLICAS_ACK_TIMEOUT: TIMEOUT,
    });
    api = client(broker.url);
  });
  after(async () => {
    await broker.close();
    await cluster.stop();
  });

  test("WAIT runs on the shard that wrote: only the queue whose shard's replica is paused is refused", async () => {
    // One queue per primary (their keys `<prefix>{<queue>}:…` hash by the queue's name).
    const primaries = await cluster.primaries();
    const queueOf = new Map<number, string>();
    for (let index = 0; queueOf.size < primaries.length; index++) {
      const queue = `shard-${index}`;
      const port = await cluster.primaryForKey(`${prefix}{${queue}}:`);
      if (!queueOf.has(port)) queueOf.set(port, queue);
    }
    const [pausedShard] = primaries;
    assert.ok(pausedShard);
    const replica = (await cluster.topology()).find((node) => node.primaryId === pausedShard.id);
    assert.ok(replica, 'every primary has a replica');
    await cluster.kill(replica.port, 'SIGSTOP');
    const statuses = new Map<number, number>();
    try {
      for (const [port, queue] of queueOf) {
        statuses.set(port, (await api.push([item(queue, `t-${queue}`)])).status);
      }
    } finally {
      await cluster.kill(replica.port, 'SIGCONT');
    }
    for (const [port, status] of statuses) {
      assert.equal(status, port === pausedShard.port ? 503 : 201, `shard ${port}`);
    }
    const retried = await api.push([
      item(queueOf.get(pausedShard.port) as string, `t-${queueOf.get(pausedShard.port)}`),
    ]);
    assert.equal(retried.status, 201);
    assert.equal((retried.body as { status: string }[])[0]?.status, 'duplicate');
  });
});

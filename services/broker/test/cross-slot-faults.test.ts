/*
 * Transactions across Redis Cluster slots under the faults the transaction soak met
 * (test/soak/transaction-soak.test.ts; docs/broker-outbox.md, "Transactions across slots"):
 * - defect A: with BROKER_MIN_REPLICAS_ACK, a commit whose replica barrier times out has run on
 *   the primary; the node took the 503 for a refusal and released the other shares, leaving the
 *   source acked without its sink messages. Now recovery decides it and applies them.
 * - defect B: a release (abort) that cannot reach a share's primary must keep the transaction's
 *   record, or the share stays prepared (its room held) forever once its primary is back. Now
 *   the record stays and a later recovery round releases it.
 * - lost replies (through the reply-loss proxy, on standalone with the one-slot rule): the
 *   prepare, the commit or an apply run twice, and the transaction still commits whole, once.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { createRedis, type RedisClient, redisTopologyFromEnv, runScript } from '@herald/redis';
import {
  keySlot,
  RedisCluster,
  RedisServer,
  ReplyLossProxy,
  scriptCall,
  uniquePrefix,
  waitFor,
} from '@herald/testkit';
import { namespaceAndTask, partitionIdOf } from '../src/identifiers.js';
import type { Broker } from '../src/index.js';
import { pushItemArguments } from '../src/redis/transactions.js';
import { loadBrokerScripts } from '../src/scripts.js';
import { type BrokerClient, client, startTestBroker } from './helpers.js';

/** Queue names whose slots are served by different primaries of `cluster` (one per primary). */
async function onPrimaries(cluster: RedisCluster, roles: readonly string[]): Promise<string[]> {
  const names: string[] = [];
  const used = new Set<number>();
  for (let index = 0; names.length < roles.length; index++) {
    const name = `faults.${roles[names.length]}.${index}`;
    const primary = await cluster.primaryForSlot(keySlot(`{${encodeURIComponent(name)}}`));
    if (used.has(primary)) continue;
    used.add(primary);
    names.push(name);
  }
  return names;
}

interface Leased {
  transactionId: string;
  partitionId: string;
  leaseId: string;
}

/** The transaction under test: ack `popped` (its queue commits), push one message to each sink. */
function ackAndPush(api: BrokerClient, popped: Leased, sinkA: string, sinkB: string) {
  return api.call('POST', '/api/v1/transaction', {
    operations: [
      {
        type: 'ack',
        transactionId: popped.transactionId,
        partitionId: popped.partitionId,
        leaseId: popped.leaseId,
        status: 'completed',
      },
      {
        type: 'push',
        items: [
          { queue: sinkA, payload: 'a', transactionId: 's1-a' },
          { queue: sinkB, payload: 'b', transactionId: 's1-b' },
        ],
      },
    ],
  });
}

describe('a commit whose replica barrier timed out (BROKER_MIN_REPLICAS_ACK)', () => {
  let cluster: RedisCluster;
  let broker: Broker;
  let api: BrokerClient;
  before(async () => {
    cluster = await RedisCluster.start({ primaries: 3, replicasPerPrimary: 1 });
    broker = await startTestBroker('redis', {
      REDIS_CLUSTER_NODES: cluster.nodes.join(','),
      BROKER_KEY_PREFIX: uniquePrefix('faults-a'),
      BROKER_TRANSACTION_RECOVERY_AFTER: '500',
      BROKER_MIN_REPLICAS_ACK: '1',
      BROKER_MIN_REPLICAS_ACK_TIMEOUT: '200',
    });
    api = client(broker.url);
  });
  after(async () => {
    await broker.close();
    await cluster.stop();
  });

  test('answers 503, and recovery applies the other shares: the transaction ends whole', async () => {
    const [source, sinkA, sinkB] = await onPrimaries(cluster, ['source', 'sink-a', 'sink-b']);
    assert.ok(source && sinkA && sinkB);
    await api.push([{ queue: source, payload: 'in', transactionId: 's1' }]);
    const popped = (await api.pop(source)).body.messages[0];
    // The source's primary commits (ack first); its replica stops confirming.
    const primary = await cluster.primaryForKey(`{${encodeURIComponent(source)}}`);
    const topology = await cluster.topology();
    const primaryId = topology.find((node) => node.port === primary)?.id;
    const replica = topology.find((node) => node.primaryId === primaryId)?.port;
    assert.ok(replica);
    await cluster.kill(replica, 'SIGSTOP');
    let answer: Awaited<ReturnType<BrokerClient['call']>>;
    try {
      answer = await ackAndPush(api, popped, sinkA, sinkB);
    } finally {
      await cluster.kill(replica, 'SIGCONT');
    }
    assert.equal(answer.status, 503, JSON.stringify(answer.body));
    // The commit ran on the primary: the ack is applied, and the pushes follow through recovery.
    for (const sink of [sinkA, sinkB]) {
      await waitFor(async () => (await api.pop(sink)).status === 200, {
        what: `the push to ${sink} applied`,
      });
    }
    const again = await api.ack({
      transactionId: popped.transactionId,
      partitionId: popped.partitionId,
      leaseId: popped.leaseId,
      status: 'completed',
    });
    assert.equal(again.body[0].repeat, true, 'the ack was applied');
  });
});

describe('a release that cannot reach its share', () => {
  const prefix = uniquePrefix('faults-b');
  const scripts = loadBrokerScripts();
  let cluster: RedisCluster;
  let broker: Broker;
  let redis: RedisClient;
  before(async () => {
    cluster = await RedisCluster.start({ primaries: 3, replicasPerPrimary: 0 });
    // The data survives a kill -9 (AOF), and the other primaries serve while one is down.
    for (const node of cluster.nodes) {
      const direct = createRedis({
        topology: { kind: 'standalone', url: `redis://${node}` } as never,
        connectionName: 'faults',
      });
      await direct.config('SET', 'appendonly', 'yes');
      await direct.config('SET', 'appendfsync', 'always');
      await direct.config('SET', 'cluster-require-full-coverage', 'no');
      direct.disconnect();
    }
    const topology = redisTopologyFromEnv({ REDIS_CLUSTER_NODES: cluster.nodes.join(',') });
    assert.ok(topology);
    redis = createRedis({ topology, connectionName: 'faults-test' });
    broker = await startTestBroker('redis', {
      REDIS_CLUSTER_NODES: cluster.nodes.join(','),
      BROKER_KEY_PREFIX: prefix,
      BROKER_TRANSACTION_RECOVERY_AFTER: '500',
    });
  });
  after(async () => {
    await broker.close();
    redis.disconnect();
    await cluster.stop();
  });

  test('keeps the record until the share is released, once its primary is back', async () => {
    const [coordinator, target] = await onPrimaries(cluster, ['coordinator', 'target']);
    assert.ok(coordinator && target);
    const base = (queue: string) => `${prefix}{${encodeURIComponent(queue)}}:`;
    const txid = `orphan-${Date.now()}`;
    const { namespace, task } = namespaceAndTask(target);
    // A share prepared by a node that died before its commit (as redis/transactions.ts does it).
    const prepared = await runScript(
      redis,
      scripts.get('txn-prepare') as never,
      [base(target)],
      [
        txid,
        Date.now() + 60_000,
        'push',
        '1',
        namespace,
        task,
        ...pushItemArguments(
          {
            queue: target,
            partition: 'Default',
            transactionId: 'o1',
            messageId: `m-${txid}`,
            traceId: null,
            data: '"orphan"',
            producerSub: null,
          },
          partitionIdOf(target, 'Default'),
          true,
        ),
      ],
    );
    assert.deepEqual(prepared, ['OK']);
    await redis.hset(
      `${prefix}{txn}:records`,
      txid,
      JSON.stringify({ coordinator: [coordinator], shares: [[target]] }),
    );
    // The target's primary dies; only then is the transaction due for recovery.
    const primary = await cluster.primaryForKey(`{${encodeURIComponent(target)}}`);
    await cluster.kill(primary);
    await redis.zadd(`${prefix}{txn}:pending`, Date.now(), txid);
    // Recovery decides it aborted (the coordinator answers) but cannot release the share.
    await waitFor(
      async () => (await redis.get(`${base(coordinator)}txd:${txid}`).catch(() => null)) === 'aborted',
      {
        what: 'recovery to decide the transaction',
      },
    );
    assert.notEqual(
      await redis.zscore(`${prefix}{txn}:pending`, txid),
      null,
      'the record stays while the share is away',
    );
    await cluster.restart(primary);
    await waitFor(
      async () => (await redis.hget(`${base(target)}txp:${txid}`, 'state').catch(() => null)) === 'aborted',
      {
        what: 'the share released once its primary is back',
        timeoutMs: 30_000,
      },
    );
    assert.equal(Number((await redis.hget(`${base(target)}stats`, 'txpush')) ?? 0), 0);
    await waitFor(async () => (await redis.zscore(`${prefix}{txn}:pending`, txid)) === null, {
      what: 'the record forgotten',
    });
  });
});

describe('a transaction across slots under lost Redis replies (one-slot rule on standalone)', () => {
  const prefix = uniquePrefix('faults-c');
  const scripts = loadBrokerScripts();
  let server: RedisServer;
  let proxy: ReplyLossProxy;
  let broker: Broker;
  let api: BrokerClient;
  let redis: RedisClient;
  before(async () => {
    server = await RedisServer.start();
    proxy = await ReplyLossProxy.start({ port: server.port });
    redis = createRedis({
      topology: { kind: 'standalone', url: server.url } as never,
      connectionName: 'faults-c',
    });
    broker = await startTestBroker('redis', {
      REDIS_URL: proxy.url,
      BROKER_KEY_PREFIX: prefix,
      BROKER_REDIS_ONE_SLOT: 'true',
      BROKER_TRANSACTION_RECOVERY_AFTER: '500',
    });
    api = client(broker.url);
  });
  after(async () => {
    await broker.close();
    redis.disconnect();
    await proxy.close();
    await server.destroy();
  });

  for (const step of ['txn-prepare', 'transaction', 'txn-apply'] as const)
    test(`the reply of ${step} lost: resent, the transaction commits whole, once`, async () => {
      const stamp = `${step}.${Date.now()}`;
      const [source, sinkA, sinkB] = ['source', 'sink-a', 'sink-b'].map(
        (role) => `faults-c.${role}.${stamp}`,
      ) as [string, string, string];
      await api.push([{ queue: source, payload: 'in', transactionId: 's1' }]);
      const popped = (await api.pop(source)).body.messages[0];
      const lost = proxy.loseNextReply(scriptCall(scripts.get(step) as { sha: string; source: string }));
      const answer = await ackAndPush(api, popped, sinkA, sinkB);
      await lost;
      assert.equal(answer.status, 200, JSON.stringify(answer.body));
      assert.equal(answer.body.success, true, answer.body.error);
      for (const sink of [sinkA, sinkB]) {
        const key = `${prefix}{${encodeURIComponent(sink)}}:`;
        assert.equal(await redis.xlen(`${key}s:Default`), 1, `${sink}: stored once`);
        assert.equal(
          Number((await redis.hget(`${key}stats`, 'txpush')) ?? 0),
          0,
          `${sink}: no room left held`,
        );
      }
      const again = await api.ack({
        transactionId: popped.transactionId,
        partitionId: popped.partitionId,
        leaseId: popped.leaseId,
        status: 'completed',
      });
      assert.equal(again.body[0].repeat, true, 'the ack was applied');
      await waitFor(async () => (await redis.zcard(`${prefix}{txn}:pending`)) === 0, {
        what: 'no transaction left recorded',
      });
    });
});

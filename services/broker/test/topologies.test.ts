/*
 * The broker on a real Redis Cluster (3 primaries + 3 replicas) and Sentinel set (issue #12;
 * docs/broker-topologies.md "Redis topologies"): the part of the topology runs that `npm test` keeps. The
 * full suites run on both with HERALD_TEST_TOPOLOGY (helpers.ts, docs/broker-topologies.md).
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { createRedis } from '@herald/redis';
import { RedisCluster, RedisSentinelSet, uniquePrefix, waitFor } from '@herald/testkit';
import type { Broker, RedisStorage } from '../src/index.js';
import { type BrokerClient, client, queueName, startTestBroker } from './helpers.js';

/** The BullMQ prefix maintenance.ts derives from the key prefix (hash-tagged: one slot). */
const heartbeatKey = (prefix: string) => `{${prefix}bull}:herald-maintenance-heartbeat`;

/** The Redis variables of a private harness, and its stop. */
const TOPOLOGIES = {
  cluster: async () => {
    const cluster = await RedisCluster.start();
    return { environment: { REDIS_CLUSTER_NODES: cluster.nodes.join(',') }, stop: () => cluster.stop() };
  },
  sentinel: async () => {
    const set = await RedisSentinelSet.start();
    return {
      environment: { REDIS_SENTINELS: set.sentinels.join(','), REDIS_SENTINEL_MASTER: set.masterName },
      stop: () => set.stop(),
    };
  },
};

for (const [topology, start] of Object.entries(TOPOLOGIES)) {
  describe(`broker on Redis ${topology}`, () => {
    const prefix = uniquePrefix('topology');
    const nodes: Broker[] = [];
    let stop: () => Promise<void> = async () => undefined;
    let first: BrokerClient;
    let second: BrokerClient;
    before(async () => {
      const harness = await start();
      stop = harness.stop;
      const environment = {
        ...harness.environment,
        BROKER_KEY_PREFIX: prefix,
        BROKER_STATS_INTERVAL: '500',
        BROKER_REDIS_SLOT_GROUP: 'namespace',
      };
      // Two nodes of one deployment; maintenance every 200 ms (helpers.ts) on both.
      nodes.push(await startTestBroker('redis', environment));
      nodes.push(await startTestBroker('redis', environment));
      first = client((nodes[0] as Broker).url);
      second = client((nodes[1] as Broker).url);
    });
    after(async () => {
      for (const node of nodes) await node.close();
      await stop();
    });

    test('push, pop, ack and a transaction of one namespace across two nodes', async () => {
      const namespace = queueName('topo').replaceAll('.', '-');
      const source = `${namespace}.source`;
      const sink = `${namespace}.sink`;
      assert.equal((await first.push([{ queue: source, payload: 'in', transactionId: 't1' }])).status, 201);
      const popped = (await second.pop(source)).body.messages[0];
      const committed = await second.call('POST', '/api/v1/transaction', {
        operations: [
          { type: 'push', items: [{ queue: sink, payload: 'out', transactionId: 'o1' }] },
          {
            type: 'ack',
            transactionId: popped.transactionId,
            partitionId: popped.partitionId,
            leaseId: popped.leaseId,
            status: 'completed',
          },
        ],
      });
      assert.equal(committed.body.success, true, committed.body.error);
      const out = await first.pop(sink);
      assert.equal(out.body.messages[0].data, 'out');
      assert.equal(
        (await first.ack({ ...pick(out.body.messages[0]), status: 'completed' })).body[0].success,
        true,
      );
    });

    test('a streams cycle (state, sink push, source ack) on one node, its state read on the other', async () => {
      const namespace = queueName('topo-st').replaceAll('.', '-');
      const source = `${namespace}.source`;
      const sink = `${namespace}.sink`;
      assert.equal((await first.push([{ queue: source, payload: 'in', transactionId: 't1' }])).status, 201);
      const registered = await first.call('POST', '/streams/v1/queries', {
        name: `${namespace}-query`,
        source_queue: source,
        sink_queue: sink,
        config_hash: 'h1',
      });
      assert.equal(registered.status, 200, JSON.stringify(registered.body));
      const group = `streams.${registered.body.name}`;
      const popped = (await first.pop(source, `consumerGroup=${encodeURIComponent(group)}`)).body.messages[0];
      const cycle = await first.call('POST', '/streams/v1/cycle', {
        query_id: registered.body.query_id,
        partition_id: popped.partitionId,
        consumer_group: group,
        state_ops: [{ type: 'upsert', key: 'count', value: { n: 1 } }],
        push_items: [{ queue: sink, payload: 'out', transactionId: 'o1' }],
        ack: { transactionId: 't1', leaseId: popped.leaseId, status: 'completed', count: 1 },
      });
      assert.equal(cycle.body.success, true, JSON.stringify(cycle.body));
      const state = await second.call('POST', '/streams/v1/state/get', {
        query_id: registered.body.query_id,
        partition_id: popped.partitionId,
      });
      assert.deepEqual(
        state.body.rows.map((row: { key: string; value: unknown }) => [row.key, row.value]),
        [['count', { n: 1 }]],
      );
      assert.equal((await second.pop(sink)).body.messages[0].data, 'out');
    });

    test('a pop parked on one node is woken by a push through the other', async () => {
      const queue = queueName('topo-wake');
      const pop = first.pop(queue, 'wait=true&timeout=30000');
      // Parked: the node counts it (the subscription follows; a push before it is found by the
      // wake-up the subscription triggers, after it by the notification).
      await waitFor(async () => {
        const text = await (await fetch(`${(nodes[0] as Broker).url}/metrics`)).text();
        return /herald_broker_parked_long_polls\S* [1-9]/.test(text);
      });
      assert.equal((await second.push([{ queue, payload: 'wake', transactionId: 'w' }])).status, 201);
      const reply = await pop;
      assert.equal(reply.status, 200);
      assert.equal(reply.body.messages[0].data, 'wake');
    });

    test('BullMQ maintenance runs every job (lease sweep, retention, stats)', async () => {
      // A plain client on the topology the node uses, to read what maintenance writes.
      const redis = createRedis({ topology: ((nodes[0] as Broker).storage as RedisStorage).topology });
      try {
        await waitFor(async () => {
          const stamps = await redis.hgetall(heartbeatKey(prefix));
          return ['lease-sweep', 'retention', 'stats'].every((job) => Number(stamps[job]) > 0);
        });
        assert.equal((await fetch(`${(nodes[0] as Broker).url}/readyz`)).status, 200);
      } finally {
        redis.disconnect();
      }
    });
  });
}

function pick(message: { transactionId: string; partitionId: string; leaseId: string }) {
  return { transactionId: message.transactionId, partitionId: message.partitionId, leaseId: message.leaseId };
}

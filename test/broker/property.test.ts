/*
 * Property: K consumers on 2 nodes (Redis) or 1 (in-process), P partitions, G groups, random
 * complete/fail/time-out, on each backend.
 * Every message reaches every group, completions are in push order per partition, each is
 * completed exactly once, and a redelivery only follows a failure or a lease expiry, with
 * retryCount equal to the attempts that came before. Seeded, bounded.
 */
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { type Broker, brokerSpec, startBroker } from '@herald/broker';
import { parseEnv } from '@herald/config';
import { seededRandom, stopTestRedis, testRedisEnvironment, uniquePrefix } from '@herald/testkit';
import { call } from './nodes.js';

const SEED = Number(process.env.PROPERTY_SEED ?? 20_240_611);
const PARTITIONS = 4;
const PER_PARTITION = 25;
const GROUPS = ['alpha', 'beta'];
const CONSUMERS_PER_GROUP = 3;
const QUEUE = `prop.${SEED}.${Date.now().toString(36)}`;
type Backend = 'redis' | 'memory';

/** Two nodes on one Redis; the in-process backend is one node (its state lives in the process). */
const nodes: Record<Backend, Broker[]> = { redis: [], memory: [] };
before(async () => {
  const environment = {
    PORT: '0',
    HOST: '127.0.0.1',
    LOG_LEVEL: 'silent',
    BROKER_LEASE_SWEEP_INTERVAL: '200',
    SHUTDOWN_TIMEOUT: '2000',
  };
  const start = (extra: Record<string, string>) =>
    startBroker(parseEnv(brokerSpec, { ...environment, ...extra }), { fastify: { logger: false } });
  // HERALD_TEST_TOPOLOGY picks standalone (default), Sentinel or Cluster.
  const redis = { ...(await testRedisEnvironment()), BROKER_KEY_PREFIX: uniquePrefix('prop') };
  nodes.redis = await Promise.all([start(redis), start(redis)]);
  nodes.memory = [await start({})];
});
after(async () => {
  await Promise.all([...nodes.redis, ...nodes.memory].map((node) => node.close()));
  await stopTestRedis();
});

type Outcome = 'completed' | 'failed' | 'timeout';

for (const backend of ['redis', 'memory'] as const) {
  test(
    `${backend}: every message reaches every group once, in order (seed ${SEED})`,
    { timeout: 60_000 },
    () => property(backend),
  );
}

async function property(backend: Backend): Promise<void> {
  const random = seededRandom(SEED);
  const a = nodes[backend][0] as Broker;
  const b = nodes[backend][1] ?? a;
  await call(a.url, 'POST', '/api/v1/configure', {
    queue: QUEUE,
    options: { leaseTime: 1, retryLimit: 1000 },
  });
  const order = new Map<string, string[]>();
  const items = [];
  for (let n = 0; n < PER_PARTITION; n++) {
    for (let p = 0; p < PARTITIONS; p++) {
      const partition = `p${p}`;
      const transactionId = `${partition}-${n}`;
      items.push({ queue: QUEUE, partition, transactionId, payload: { partition, n } });
      order.set(partition, [...(order.get(partition) ?? []), transactionId]);
    }
  }
  for (let i = 0; i < items.length; i += 20) {
    const node = random() < 0.5 ? a : b;
    assert.equal(
      (await call(node.url, 'POST', '/api/v1/push', { items: items.slice(i, i + 20) })).status,
      201,
    );
  }

  // One entry per delivery with its outcome once known. A consumer's ack may come back after
  // the message was already redelivered (its lease expired, or its failure was applied before
  // the reply arrived), so each pop keeps references to its own entries and the redelivery
  // rules are checked once every outcome is known.
  // popOrder: the order in which the test saw the pops. A pop of message n+1 of a partition is
  // served only after n was resolved, and n's pop reply was seen before its ack was sent, so
  // pop order is causal; ack replies of different consumers may arrive in any order.
  type Delivery = { retryCount: number; popOrder: number; outcome?: Outcome };
  const history = new Map<string, Delivery[]>();
  const completions = new Map<string, { transactionId: string; popOrder: number }[]>();
  let pops = 0;
  const completedCount = new Map<string, number>();
  const total = PARTITIONS * PER_PARTITION;
  const done = (group: string) => (completions.get(group)?.length ?? 0) >= total;
  let redeliveries = 0;

  async function consumer(group: string): Promise<void> {
    const deadline = Date.now() + 45_000;
    while (!done(group) && Date.now() < deadline) {
      const node = random() < 0.5 ? a : b;
      const batch = 1 + Math.floor(random() * 4);
      const popped = await call(
        node.url,
        'GET',
        `/api/v1/pop/queue/${QUEUE}?consumerGroup=${group}&batch=${batch}&wait=true&timeout=1500`,
      );
      if (popped.status === 204) continue;
      assert.equal(popped.status, 200);
      const messages = popped.body.messages as any[];
      const deliveries: Delivery[] = [];
      for (const message of messages) {
        const key = `${group}/${message.transactionId}`;
        const past = history.get(key) ?? [];
        if (past.length > 0) redeliveries++;
        const delivery: Delivery = { retryCount: message.retryCount, popOrder: pops++ };
        past.push(delivery);
        history.set(key, past);
        deliveries.push(delivery);
      }
      const roll = random();
      if (roll < 0.08) {
        for (const delivery of deliveries) delivery.outcome = 'timeout';
        continue;
      }
      const failFrom = roll < 0.25 ? Math.floor(random() * messages.length) : messages.length;
      const acks = messages.map((message, index) => ({
        transactionId: message.transactionId,
        partitionId: message.partitionId,
        leaseId: message.leaseId,
        status: index < failFrom ? 'completed' : 'failed',
      }));
      const ackNode = random() < 0.5 ? a : b;
      const reply = await call(ackNode.url, 'POST', '/api/v1/ack/batch', {
        consumerGroup: group,
        acknowledgments: acks,
      });
      assert.equal(reply.status, 200);
      reply.body.forEach((result: any, index: number) => {
        const message = messages[index];
        const key = `${group}/${message.transactionId}`;
        const delivery = deliveries[index] as Delivery;
        const status = (acks[index] as { status: string }).status;
        if (!result.success) {
          assert.equal(result.error, 'Invalid or expired lease', `${key}: ${result.error}`);
          delivery.outcome = 'timeout';
          return;
        }
        delivery.outcome = status as Outcome;
        if (status === 'completed') {
          completedCount.set(key, (completedCount.get(key) ?? 0) + 1);
          completions.set(group, [
            ...(completions.get(group) ?? []),
            { transactionId: message.transactionId, popOrder: delivery.popOrder },
          ]);
        }
      });
    }
  }

  await Promise.all(
    GROUPS.flatMap((group) => Array.from({ length: CONSUMERS_PER_GROUP }, () => consumer(group))),
  );

  for (const group of GROUPS) {
    const completed = (completions.get(group) ?? [])
      .sort((left, right) => left.popOrder - right.popOrder)
      .map((completion) => completion.transactionId);
    assert.equal(completed.length, total, `${group} completed every message`);
    for (const [partition, expected] of order) {
      assert.deepEqual(
        completed.filter((id) => id.startsWith(`${partition}-`)),
        expected,
        `${group}/${partition} in order`,
      );
    }
  }
  for (const [key, count] of completedCount) assert.equal(count, 1, `${key} completed once`);
  for (const [key, deliveries] of history) {
    deliveries.forEach((delivery, index) => {
      const earlier = deliveries.slice(0, index);
      const attempts = earlier.filter((entry) => entry.outcome === 'failed' || entry.outcome === 'timeout');
      assert.equal(delivery.retryCount, attempts.length, `${key} delivery ${index}: retryCount`);
      const previous = earlier.at(-1);
      if (previous) {
        assert.ok(
          previous.outcome === 'failed' || previous.outcome === 'timeout',
          `${key} redelivered after ${previous.outcome}`,
        );
      }
    });
  }
  assert.ok(redeliveries > 0, 'the run exercised redeliveries');
}

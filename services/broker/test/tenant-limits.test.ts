/*
 * Limits per tenant on the broker (issue #24, item 2; docs/broker-api.md, "Limits per tenant"):
 * the push rate and the in-flight budget, on two nodes sharing one Redis and on the in-process
 * backend: exact budgets across nodes, 429 with Retry-After and a Queen-style error, nothing
 * stored from a refused push, FIFO intact, slots freed by acks and by lease expiry (a node
 * killed with messages leased), and the admin route's overrides. Time is a moved KeyClock.
 */
import assert from 'node:assert/strict';
import { createHmac } from 'node:crypto';
import { after, before, describe, test } from 'node:test';
import { parseEnv } from '@herald/config';
import { createRedis, KeyClock, type RedisClient, redisTopologyFrom } from '@herald/redis';
import { testRedisEnvironment, uniquePrefix } from '@herald/testkit';
import { brokerSpec } from '../src/config.js';
import { type Broker, startBroker } from '../src/index.js';
import { BACKENDS, type Backend, type BrokerClient, client, queueName } from './helpers.js';

const START = Date.now();

interface Cluster {
  readonly nodes: readonly BrokerClient[];
  readonly brokers: Broker[];
  readonly clock: KeyClock;
  /** A fresh queue of namespace `tenant` (the tenant in BROKER_LIMIT_TENANT=namespace). */
  queue(tenant: string): Promise<string>;
  close(): Promise<void>;
}

/** Two nodes on one Redis (one on the in-process backend), on one moved clock. */
async function startCluster(backend: Backend, settings: Record<string, string>): Promise<Cluster> {
  const environment: Record<string, string> = {
    PORT: '0',
    HOST: '127.0.0.1',
    LOG_LEVEL: 'silent',
    BROKER_LEASE_SWEEP_INTERVAL: '60000',
    BROKER_RETENTION_INTERVAL: '60000',
    BROKER_STATS_INTERVAL: '60000',
    SHUTDOWN_TIMEOUT: '2000',
    BROKER_LIMIT_TENANT: 'namespace',
    ...settings,
  };
  let redis: RedisClient | undefined;
  let prefix = '';
  if (backend === 'redis') {
    prefix = uniquePrefix('broker');
    Object.assign(environment, await testRedisEnvironment(), { BROKER_KEY_PREFIX: prefix });
    if (environment.REDIS_CLUSTER_NODES) environment.BROKER_REDIS_SLOT_GROUP = 'namespace';
    const topology = redisTopologyFrom(parseEnv(brokerSpec, environment));
    if (!topology) throw new Error('no Redis topology');
    redis = createRedis({ topology, connectionName: 'test-clock' });
  }
  const clock = new KeyClock(START, redis);
  const byNamespace = environment.BROKER_REDIS_SLOT_GROUP === 'namespace';
  const baseOf = (queue: string) =>
    byNamespace
      ? `${prefix}{${encodeURIComponent(queue.split('.')[0] ?? '')}}:${encodeURIComponent(queue)}:`
      : `${prefix}{${encodeURIComponent(queue)}}:`;
  await clock.track([`${prefix}{limits}:`]);
  const config = parseEnv(brokerSpec, environment);
  const count = backend === 'redis' ? 2 : 1;
  const brokers: Broker[] = [];
  for (let i = 0; i < count; i++)
    brokers.push(await startBroker(config, { fastify: { logger: false }, clock }));
  return {
    async close() {
      await Promise.all(brokers.map((broker) => broker.close()));
      redis?.disconnect();
    },
    nodes: brokers.map((broker) => client(broker.url)),
    brokers,
    clock,
    async queue(tenant) {
      const queue = queueName(tenant);
      await clock.track([baseOf(queue)]);
      return queue;
    },
  };
}

/** Node i of the cluster, round robin (one node on the in-process backend). */
const nodeOf = (cluster: Cluster, i: number): BrokerClient =>
  cluster.nodes[i % cluster.nodes.length] as BrokerClient;

const SECRET = 'tenant-limits-test-secret-0123456789abcdef';

/** An HS256 token with the read-write role and, when given, a `sub`. */
function token(sub?: string): string {
  const encode = (value: object) => Buffer.from(JSON.stringify(value)).toString('base64url');
  const body = `${encode({ alg: 'HS256', typ: 'JWT' })}.${encode({ role: 'read-write', ...(sub ? { sub } : {}) })}`;
  return `${body}.${createHmac('sha256', SECRET).update(body).digest('base64url')}`;
}

interface Popped {
  transactionId: string;
  partitionId: string;
  leaseId: string;
  data: { i: number };
}

async function popAll(api: BrokerClient, queue: string): Promise<number[]> {
  const seen: number[] = [];
  for (;;) {
    const reply = await api.pop(queue, 'batch=100&autoAck=true');
    if (reply.status === 204) return seen;
    assert.equal(reply.status, 200);
    for (const message of (reply.body as { messages: Popped[] }).messages) seen.push(message.data.i);
  }
}

for (const backend of BACKENDS) {
  describe(`push rate per tenant (${backend})`, () => {
    let cluster: Cluster;
    before(async () => {
      cluster = await startCluster(backend, { BROKER_LIMIT_PUSH_RATE: '5' });
    });
    after(() => cluster.close());

    test('exactly the budget is accepted across nodes; a refusal is 429 with Retry-After and stores nothing; FIFO holds', async () => {
      const queue = await cluster.queue('acme');
      const accepted: number[] = [];
      const statuses: number[] = [];
      for (let i = 0; i < 8; i++) {
        const reply = await nodeOf(cluster, i).push([{ queue, payload: { i } }]);
        statuses.push(reply.status);
        if (reply.status === 201) accepted.push(i);
        else {
          assert.equal(reply.status, 429);
          assert.equal(reply.headers.get('retry-after'), '1');
          assert.match(
            (reply.body as { error: string }).error,
            /^Tenant 'acme' is over its push limit of 5 messages per second/,
          );
        }
      }
      assert.deepEqual(statuses, [201, 201, 201, 201, 201, 429, 429, 429]);
      // A batch that does not fit is refused whole, on either node.
      await cluster.clock.advance(400);
      const batch = await nodeOf(cluster, 1).push([8, 9, 10].map((i) => ({ queue, payload: { i } })));
      assert.equal(batch.status, 429);
      const two = await nodeOf(cluster, 0).push([11, 12].map((i) => ({ queue, payload: { i } })));
      assert.equal(two.status, 201);
      accepted.push(11, 12);
      await cluster.clock.advance(1000);
      const after = await nodeOf(cluster, 1).push([13, 14, 15].map((i) => ({ queue, payload: { i } })));
      assert.equal(after.status, 201);
      accepted.push(13, 14, 15);
      assert.deepEqual(await popAll(nodeOf(cluster, 0), queue), accepted);
    });

    test('a push spanning tenants is taken from all or refused whole; a request larger than the budget is a 400', async () => {
      const full = await cluster.queue('full');
      const other = await cluster.queue('other');
      assert.equal(
        (await nodeOf(cluster, 0).push([0, 1, 2, 3, 4].map((i) => ({ queue: full, payload: { i } })))).status,
        201,
      );
      const mixed = await nodeOf(cluster, 1).push([
        { queue: other, payload: { i: 0 } },
        { queue: full, payload: { i: 5 } },
      ]);
      assert.equal(mixed.status, 429);
      assert.match((mixed.body as { error: string }).error, /Tenant 'full'/);
      // Nothing was taken from `other`: its whole budget is there, and nothing of it was stored.
      assert.deepEqual(await popAll(nodeOf(cluster, 0), other), []);
      assert.equal(
        (await nodeOf(cluster, 0).push([1, 2, 3, 4, 5].map((i) => ({ queue: other, payload: { i } }))))
          .status,
        201,
      );
      const tooLarge = await nodeOf(cluster, 1).push(
        [0, 1, 2, 3, 4, 5].map((i) => ({ queue: other, payload: { i } })),
      );
      assert.equal(tooLarge.status, 400);
      assert.equal(tooLarge.headers.get('retry-after'), null);
      assert.match(
        (tooLarge.body as { error: string }).error,
        /the request alone exceeds its push limit of 5/,
      );
    });

    test('a transaction over the push rate is refused before anything is applied', async () => {
      const queue = await cluster.queue('txn');
      assert.equal(
        (await nodeOf(cluster, 0).push([0, 1, 2, 3].map((i) => ({ queue, payload: { i } })))).status,
        201,
      );
      const popped = await nodeOf(cluster, 1).pop(queue, 'batch=1');
      const message = (popped.body as { messages: Popped[] }).messages[0] as Popped;
      const refused = await nodeOf(cluster, 1).call('POST', '/api/v1/transaction', {
        operations: [
          { type: 'ack', transactionId: message.transactionId, partitionId: message.partitionId },
          { type: 'push', items: [4, 5].map((i) => ({ queue, payload: { i } })) },
        ],
      });
      assert.equal(refused.status, 429);
      // The ack was not applied either: the message is still leased (no redelivery before expiry),
      // and acking it now succeeds.
      const ack = await nodeOf(cluster, 0).ack({
        transactionId: message.transactionId,
        partitionId: message.partitionId,
        leaseId: message.leaseId,
      });
      assert.deepEqual(
        (ack.body as { success: boolean; repeat: boolean }[]).map(({ success, repeat }) => ({
          success,
          repeat,
        })),
        [{ success: true, repeat: false }],
      );
    });

    test('an override set on one node applies on every node; deleting it restores the default', async () => {
      const queue = await cluster.queue('vip');
      const put = await nodeOf(cluster, 0).call('PUT', '/api/v1/system/limits/push/vip', { limit: 1 });
      assert.deepEqual(put.body, { kind: 'push', tenant: 'vip', limit: 1 });
      assert.equal((await nodeOf(cluster, 1).push([{ queue, payload: { i: 0 } }])).status, 201);
      const refused = await nodeOf(cluster, 1).push([{ queue, payload: { i: 1 } }]);
      assert.equal(refused.status, 429);
      assert.match((refused.body as { error: string }).error, /push limit of 1 /);
      const listing = await nodeOf(cluster, 1).call('GET', '/api/v1/system/limits');
      const body = listing.body as {
        tenant: string;
        defaults: { push: number | null };
        overrides: unknown[];
        usage: { push: { tenant: string; used: number; limit: number }[] };
      };
      assert.equal(body.tenant, 'namespace');
      assert.equal(body.defaults.push, 5);
      assert.deepEqual(body.overrides, [{ kind: 'push', tenant: 'vip', limit: 1 }]);
      assert.deepEqual(
        body.usage.push.find((entry) => entry.tenant === 'vip'),
        { tenant: 'vip', used: 1, limit: 1 },
      );
      await nodeOf(cluster, 0).call('DELETE', '/api/v1/system/limits/push/vip');
      assert.equal((await nodeOf(cluster, 1).push([{ queue, payload: { i: 1 } }])).status, 201);
      // Bad input: a clear 400.
      const badKind = await nodeOf(cluster, 0).call('PUT', '/api/v1/system/limits/publish/vip', { limit: 1 });
      assert.equal(badKind.status, 400);
      const badLimit = await nodeOf(cluster, 0).call('PUT', '/api/v1/system/limits/push/vip', { limit: -1 });
      assert.equal(badLimit.status, 400);
      const metrics = await (await fetch(`${cluster.brokers[0]?.url}/metrics`)).text();
      assert.match(metrics, /herald_limit_refusals_total\{[^}]*kind="push"[^}]*\} [1-9]/);
    });
  });

  describe(`in-flight budget per tenant (${backend})`, () => {
    let cluster: Cluster;
    before(async () => {
      cluster = await startCluster(backend, { BROKER_LIMIT_IN_FLIGHT: '3' });
    });
    after(() => cluster.close());

    test('leased and unacknowledged messages never exceed the budget across nodes; acks and lease expiry free slots; FIFO holds', async () => {
      const queue = await cluster.queue('jobs');
      await nodeOf(cluster, 0).configure(queue, { leaseTime: 60 });
      const items = ['a', 'b', 'c'].flatMap((partition) =>
        [0, 1, 2, 3].map((i) => ({ queue, partition, payload: { i } })),
      );
      assert.equal((await nodeOf(cluster, 0).push(items)).status, 201);
      const take = async (node: number, partition: string, batch: number) => {
        const reply = await nodeOf(cluster, node).popPartition(queue, partition, `batch=${batch}`);
        return reply.status === 200 ? (reply.body as { messages: Popped[] }).messages : reply;
      };
      const first = await take(0, 'a', 2);
      assert.ok(Array.isArray(first));
      assert.deepEqual(
        first.map((m) => m.data.i),
        [0, 1],
      );
      // One slot left: a batch of 5 on the other node gets 1 message.
      const second = await take(1, 'b', 5);
      assert.ok(Array.isArray(second));
      assert.deepEqual(
        second.map((m) => m.data.i),
        [0],
      );
      const refused = await take(0, 'c', 1);
      assert.ok(!Array.isArray(refused));
      assert.equal(refused.status, 429);
      assert.equal(refused.headers.get('retry-after'), '1');
      assert.match(
        (refused.body as { error: string }).error,
        /^Tenant 'jobs' is over its inflight limit of 3/,
      );
      // An ack on the other node frees one slot, once (a repeated ack frees nothing more).
      const acked = first[0] as Popped;
      const ackBody = {
        transactionId: acked.transactionId,
        partitionId: acked.partitionId,
        leaseId: acked.leaseId,
      };
      assert.equal((await nodeOf(cluster, 1).ack(ackBody)).status, 200);
      assert.equal((await nodeOf(cluster, 1).ack(ackBody)).status, 200);
      const third = await take(0, 'c', 5);
      assert.ok(Array.isArray(third));
      assert.deepEqual(
        third.map((m) => m.data.i),
        [0],
      );
      const full = await take(1, 'c', 1);
      assert.ok(!Array.isArray(full) && full.status === 429);
      // The leases expire (a consumer that died holding them): their slots come back, and each
      // partition delivers again from its first unacknowledged message, in order.
      await cluster.clock.advance(60_001);
      const again = await take(1, 'a', 10);
      assert.ok(Array.isArray(again));
      assert.deepEqual(
        again.map((m) => m.data.i),
        [1, 2, 3],
      );
      const b = await take(0, 'b', 10);
      assert.ok(!Array.isArray(b) && b.status === 429);
    });

    test('a node killed between reserving and leasing holds its reservation only until it expires', async () => {
      const queue = await cluster.queue('crash');
      await nodeOf(cluster, 0).push([{ queue, payload: { i: 0 } }]);
      // What a node that died right after reserving leaves behind: a reservation, never settled.
      const storage = cluster.brokers[0]?.storage;
      assert.ok(storage);
      assert.deepEqual(await storage.limits.reserveInFlight('crash', 'dead-node-lease', 3), { granted: 3 });
      assert.equal((await nodeOf(cluster, 1).pop(queue)).status, 429);
      await cluster.clock.advance(29_999);
      assert.equal((await nodeOf(cluster, 1).pop(queue)).status, 429);
      await cluster.clock.advance(1);
      const popped = await nodeOf(cluster, 1).pop(queue);
      assert.equal(popped.status, 200);
    });

    test('a transaction acking leased messages frees their slots; a lease extension keeps them', async () => {
      const queue = await cluster.queue('txack');
      await nodeOf(cluster, 0).configure(queue, { leaseTime: 10 });
      await nodeOf(cluster, 0).push([
        ...[0, 1, 2].map((i) => ({ queue, partition: 'a', payload: { i } })),
        { queue, partition: 'b', payload: { i: 3 } },
      ]);
      const popped = (await nodeOf(cluster, 0).popPartition(queue, 'a', 'batch=3')).body as {
        messages: Popped[];
      };
      assert.equal(popped.messages.length, 3);
      const [one, two] = popped.messages as [Popped, Popped, Popped];
      const extended = await nodeOf(cluster, 1).call('POST', `/api/v1/lease/${one.leaseId}/extend`, {
        seconds: 100,
      });
      assert.equal(extended.status, 200);
      // Past the original 10 s lease, the extended one still holds its slots.
      await cluster.clock.advance(10_001);
      assert.equal((await nodeOf(cluster, 1).popPartition(queue, 'b')).status, 429);
      const committed = await nodeOf(cluster, 1).call('POST', '/api/v1/transaction', {
        operations: [one, two].map((message) => ({
          type: 'ack',
          transactionId: message.transactionId,
          partitionId: message.partitionId,
        })),
      });
      assert.equal((committed.body as { success: boolean }).success, true);
      const next = await nodeOf(cluster, 0).popPartition(queue, 'b', 'batch=5');
      assert.deepEqual(
        (next.body as { messages: Popped[] }).messages.map((m) => m.data.i),
        [3],
      );
    });
  });

  describe(`tenant = the token's sub (${backend})`, () => {
    let cluster: Cluster;
    before(async () => {
      cluster = await startCluster(backend, {
        BROKER_LIMIT_TENANT: 'sub',
        BROKER_LIMIT_PUSH_RATE: '2',
        JWT_ENABLED: 'true',
        JWT_ALGORITHM: 'HS256',
        JWT_SECRET: SECRET,
      });
    });
    after(() => cluster.close());

    test("one budget per sub across queues and nodes; requests without a sub share '~anonymous'", async () => {
      const orders = await cluster.queue('orders');
      const billing = await cluster.queue('billing');
      const as = (sub: string | undefined, node: number) =>
        client((cluster.brokers[node % cluster.brokers.length] as Broker).url, token(sub));
      assert.equal((await as('alice', 0).push([{ queue: orders, payload: { i: 0 } }])).status, 201);
      assert.equal((await as('alice', 1).push([{ queue: billing, payload: { i: 1 } }])).status, 201);
      const refused = await as('alice', 0).push([{ queue: billing, payload: { i: 2 } }]);
      assert.equal(refused.status, 429);
      assert.match((refused.body as { error: string }).error, /^Tenant 'alice' is over its push limit of 2/);
      assert.equal((await as('bob', 1).push([{ queue: orders, payload: { i: 3 } }])).status, 201);
      assert.equal(
        (await as(undefined, 0).push([0, 1].map((i) => ({ queue: orders, payload: { i } })))).status,
        201,
      );
      const anonymous = await as(undefined, 1).push([{ queue: billing, payload: { i: 9 } }]);
      assert.equal(anonymous.status, 429);
      assert.match((anonymous.body as { error: string }).error, /^Tenant '~anonymous'/);
    });
  });
}

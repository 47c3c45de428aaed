/*
 * Limits per tenant on the hub (issue #24, item 2; docs/hub.md, "Limits per tenant"): streams per
 * subscriber subject (the token's `sub`, else the client address through TRUSTED_PROXIES) and
 * publishes per second per publisher, on two nodes sharing one Redis and on the in-process
 * backend: exact budgets across nodes, 429 with Retry-After, a refused publish stores nothing, a
 * node that lost Redis (as a killed one) frees its slots when its lease expires, the admin
 * route's overrides. Time is a moved KeyClock. The real SIGKILL is test/hub/limits-node-kill.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { KeyClock } from '@herald/redis';
import { testRedisUrl, uniquePrefix, waitFor } from '@herald/testkit';
import { Redis } from 'ioredis';
import {
  BACKENDS,
  type Backend,
  cleanupRedis,
  publish,
  publisherToken,
  SseStream,
  SUBSCRIBER_SECRET,
  signToken,
  startTestHub,
  subscribeUrl,
  type TestHub,
} from './helpers.js';

const TOPIC = 'https://example.com/limited';
const LEASE = 3000;

const subscriber = (sub: string) =>
  signToken({ sub, mercure: { subscribe: [{ match: '*' }] } }, SUBSCRIBER_SECRET);
const admin = publisherToken([{ match: '*' }], { herald: { admin: true } });

interface Nodes {
  readonly hubs: TestHub[];
  readonly clock: KeyClock;
  readonly redis: Redis | undefined;
}

async function startNodes(backend: Backend, settings: Record<string, string>): Promise<Nodes> {
  const prefix = uniquePrefix('hub');
  const redis = backend === 'redis' ? new Redis(await testRedisUrl()) : undefined;
  const clock = new KeyClock(Date.now(), redis);
  await clock.track([`${prefix}{limits}:`]);
  const environment = {
    MERCURE_REDIS_PREFIX: prefix,
    MERCURE_ANONYMOUS: '1',
    MERCURE_LIMIT_LEASE: String(LEASE),
    ...(backend === 'redis' ? { REDIS_URL: await testRedisUrl() } : {}),
    ...settings,
  };
  const count = backend === 'redis' ? 2 : 1;
  const hubs: TestHub[] = [];
  for (let i = 0; i < count; i++) hubs.push(await startTestHub(backend, environment, { clock }));
  return { hubs, clock, redis };
}

const node = (nodes: Nodes, i: number): TestHub => nodes.hubs[i % nodes.hubs.length] as TestHub;

function open(hub: TestHub, headers: Record<string, string> = {}): Promise<SseStream> {
  return SseStream.open(subscribeUrl(hub.url, [['match', TOPIC]]), headers);
}

after(() => cleanupRedis());

for (const backend of BACKENDS) {
  describe(`streams per subscriber subject (${backend})`, () => {
    let nodes: Nodes;
    before(async () => {
      nodes = await startNodes(backend, { MERCURE_LIMIT_SUBSCRIPTIONS: '2' });
    });
    after(async () => {
      await Promise.all(nodes.hubs.map((hub) => hub.close()));
      nodes.redis?.disconnect();
    });

    test('a subject holds exactly its limit across nodes; the next stream gets 429 with Retry-After; a closed one frees its slot', async () => {
      const alice = { authorization: `Bearer ${subscriber('alice')}` };
      const first = await open(node(nodes, 0), alice);
      const second = await open(node(nodes, 1), alice);
      assert.deepEqual([first.status, second.status], [200, 200]);
      const refused = await open(node(nodes, 0), alice);
      assert.equal(refused.status, 429);
      assert.equal(refused.headers['retry-after'], '1');
      assert.match(refused.body, /^Tenant 'alice' is over its subscriptions limit of 2 streams open at once/);
      // Another subject has its own budget.
      const bob = await open(node(nodes, 1), { authorization: `Bearer ${subscriber('bob')}` });
      assert.equal(bob.status, 200);
      first.close();
      const third = await waitFor(async () => {
        const stream = await open(node(nodes, 1), alice);
        if (stream.status === 200) return stream;
        assert.equal(stream.status, 429);
        return undefined;
      });
      // Still exactly two.
      assert.equal((await open(node(nodes, 0), alice)).status, 429);
      for (const stream of [second, third, bob]) stream.close();
    });

    test('anonymous subscribers are counted by client address', async () => {
      const anonymous = [await open(node(nodes, 0)), await open(node(nodes, 1))];
      assert.deepEqual(
        anonymous.map((stream) => stream.status),
        [200, 200],
      );
      const refused = await open(node(nodes, 1));
      assert.equal(refused.status, 429);
      assert.match(refused.body, /^Tenant 'ip:127\.0\.0\.1'/);
      // Through the trusted proxy, the forwarded address is the client's.
      const other = await open(node(nodes, 0), { 'x-forwarded-for': '203.0.113.9' });
      assert.equal(other.status, 200);
      for (const stream of [...anonymous, other]) stream.close();
    });

    if (backend === 'redis') {
      test('a node that dies with streams open frees their slots when its lease expires', async () => {
        const carol = { authorization: `Bearer ${subscriber('carol')}` };
        const onDoomed = [await open(node(nodes, 1), carol), await open(node(nodes, 1), carol)];
        assert.deepEqual(
          onDoomed.map((stream) => stream.status),
          [200, 200],
        );
        assert.equal((await open(node(nodes, 0), carol)).status, 429);
        // Node 1 dies: the connection its limits use is gone, so it neither renews nor gives slots back.
        const doomed = nodes.hubs.pop() as TestHub;
        (doomed.server.hub as unknown as { revocationsRedis: Redis }).revocationsRedis.disconnect();
        await doomed.close();
        await nodes.clock.advance(LEASE - 1);
        assert.equal((await open(node(nodes, 0), carol)).status, 429);
        await nodes.clock.advance(1);
        const after = await open(node(nodes, 0), carol);
        assert.equal(after.status, 200);
        after.close();
      });
    }
  });

  describe(`publishes per second per publisher (${backend})`, () => {
    let nodes: Nodes;
    before(async () => {
      nodes = await startNodes(backend, { MERCURE_LIMIT_PUBLISH_RATE: '3' });
    });
    after(async () => {
      await Promise.all(nodes.hubs.map((hub) => hub.close()));
      nodes.redis?.disconnect();
    });

    test('exactly the rate is accepted across nodes; a refused publish stores nothing', async () => {
      const token = publisherToken([{ match: '*' }], { sub: 'pub-1' });
      const topic = `${TOPIC}/${backend}`;
      const statuses: number[] = [];
      const accepted: string[] = [];
      for (let i = 0; i < 5; i++) {
        const result = await publish(node(nodes, i).url, { topic, data: String(i) }, { token });
        statuses.push(result.status);
        if (result.status === 200) accepted.push(result.body);
        else {
          assert.equal(result.headers.get('retry-after'), '1');
          assert.match(result.body, /^Tenant 'pub-1' is over its publish limit of 3 updates per second/);
        }
      }
      assert.deepEqual(statuses, [200, 200, 200, 429, 429]);
      // Another publisher has its own budget.
      const other = publisherToken([{ match: '*' }], { sub: 'pub-2' });
      assert.equal(
        (await publish(node(nodes, 1).url, { topic, data: 'other' }, { token: other })).status,
        200,
      );
      // A third of a second later, one more fits.
      await nodes.clock.advance(333);
      assert.equal((await publish(node(nodes, 0).url, { topic, data: 'early' }, { token })).status, 429);
      await nodes.clock.advance(1);
      const late = await publish(node(nodes, 1).url, { topic, data: 'late' }, { token });
      assert.equal(late.status, 200);
      accepted.push(late.body);
      // History holds exactly the accepted updates of pub-1 (and pub-2's), in order.
      const replay = await SseStream.open(subscribeUrl(node(nodes, 0).url, [['match', topic]]), {
        'last-event-id': 'earliest',
      });
      await replay.until(() => replay.events.length >= 5);
      const ids = replay.events.map((event) => event.id);
      assert.deepEqual(
        ids.filter((id) => accepted.includes(id as string)),
        accepted,
      );
      assert.equal(replay.events.length, 5);
      replay.close();
    });

    test('an admin override applies on every node; the route needs the admin claim', async () => {
      const token = publisherToken([{ match: '*' }], { sub: 'vip' });
      const put = await fetch(`${node(nodes, 0).origin}/herald/admin/limits/publish/vip`, {
        method: 'PUT',
        headers: {
          authorization: `Bearer ${admin}`,
          'content-type': 'application/json',
          'x-forwarded-proto': 'https',
        },
        body: JSON.stringify({ limit: 1 }),
      });
      assert.equal(put.status, 200);
      assert.deepEqual(await put.json(), { kind: 'publish', tenant: 'vip', limit: 1 });
      assert.equal((await publish(node(nodes, 1).url, { topic: TOPIC, data: '1' }, { token })).status, 200);
      assert.equal((await publish(node(nodes, 0).url, { topic: TOPIC, data: '2' }, { token })).status, 429);
      const listing = await fetch(`${node(nodes, 1).origin}/herald/admin/limits`, {
        headers: { authorization: `Bearer ${admin}`, 'x-forwarded-proto': 'https' },
      });
      const body = (await listing.json()) as {
        defaults: Record<string, number | null>;
        overrides: unknown[];
        usage: { publish: { tenant: string; used: number; limit: number }[] };
      };
      assert.deepEqual(body.defaults, { subscriptions: null, publish: 3 });
      assert.deepEqual(body.overrides, [{ kind: 'publish', tenant: 'vip', limit: 1 }]);
      assert.deepEqual(
        body.usage.publish.find((entry) => entry.tenant === 'vip'),
        { tenant: 'vip', used: 1, limit: 1 },
      );
      const notAdmin = await fetch(`${node(nodes, 0).origin}/herald/admin/limits`, {
        headers: { authorization: `Bearer ${publisherToken()}`, 'x-forwarded-proto': 'https' },
      });
      assert.equal(notAdmin.status, 403);
      const badKind = await fetch(`${node(nodes, 0).origin}/herald/admin/limits/push/vip`, {
        method: 'PUT',
        headers: {
          authorization: `Bearer ${admin}`,
          'content-type': 'application/json',
          'x-forwarded-proto': 'https',
        },
        body: JSON.stringify({ limit: 1 }),
      });
      assert.equal(badKind.status, 400);
      const metrics = await (await fetch(`${node(nodes, 0).origin}/metrics`)).text();
      assert.match(metrics, /herald_limit_refusals_total\{[^}]*kind="publish"[^}]*\} [1-9]/);
    });
  });
}

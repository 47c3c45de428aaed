import assert from 'node:assert/strict';
import { after, describe, test } from 'node:test';
import { EmbeddedRedis } from '@herald/embedded-redis';
import { KeyClock, runScript, scriptNamed } from '@herald/redis';
import { stopTestRedis, testRedisUrl, uniquePrefix } from '@herald/testkit';
import { Redis } from 'ioredis';
import {
  loadLimitScripts,
  type Refusal,
  TenantLimits,
  type TenantLimitsOptions,
  tenantKey,
} from '../src/index.js';

const START = 1_800_000_000_000;

interface Backend {
  readonly name: string;
  connect(): Promise<Redis>;
}

let embedded: EmbeddedRedis | undefined;
const clients: Redis[] = [];
const track = (client: Redis): Redis => {
  clients.push(client);
  return client;
};

const BACKENDS: readonly Backend[] = [
  {
    name: 'Redis',
    connect: async () => track(new Redis(await testRedisUrl())),
  },
  {
    name: 'in-process engine',
    connect: async () => {
      embedded ??= await EmbeddedRedis.start();
      return track(new Redis(embedded.path));
    },
  },
];

after(async () => {
  for (const client of clients) client.disconnect();
  await embedded?.close();
  await stopTestRedis();
});

/** Two nodes of one cluster (one prefix, one Redis), on one moved clock. */
async function cluster(
  backend: Backend,
  defaults: TenantLimitsOptions['defaults'],
  extra: Partial<TenantLimitsOptions> = {},
): Promise<{ a: TenantLimits; b: TenantLimits; clock: KeyClock; redis: Redis }> {
  const redis = await backend.connect();
  const clock = new KeyClock(START, redis);
  const prefix = uniquePrefix();
  const node = (nodeId: string) =>
    new TenantLimits({ redis, prefix, defaults, nodeId, clock, scriptClock: 'key', ...extra });
  const a = node('node-a');
  const b = node('node-b');
  await clock.track([a.base]);
  await a.start();
  await b.start();
  return { a, b, clock, redis };
}

const one = (tenant: string, cost = 1) => new Map([[tenant, cost]]);

function isRefusal(value: unknown): value is Refusal {
  return typeof value === 'object' && value !== null && 'retryAfterMs' in value;
}

for (const backend of BACKENDS) {
  describe(`tenant limits on ${backend.name}`, () => {
    test('a rate admits exactly its budget across two nodes, then one unit per 1000/limit ms', async () => {
      const { a, b, clock } = await cluster(backend, { push: 5 });
      const answers: (Refusal | undefined)[] = [];
      for (let i = 0; i < 8; i++) answers.push(await (i % 2 === 0 ? a : b).takeRate('push', one('acme')));
      assert.equal(answers.filter((answer) => answer === undefined).length, 5);
      const refused = answers[5];
      assert.ok(refused);
      assert.deepEqual(
        { kind: refused.kind, tenant: refused.tenant, limit: refused.limit, retry: refused.retryAfterMs },
        { kind: 'push', tenant: 'acme', limit: 5, retry: 200 },
      );
      // Another tenant has its own budget.
      assert.equal(await a.takeRate('push', one('other', 5)), undefined);
      await clock.advance(199);
      assert.ok(await b.takeRate('push', one('acme')));
      await clock.advance(1);
      assert.equal(await b.takeRate('push', one('acme')), undefined);
      assert.ok(await a.takeRate('push', one('acme')));
      await Promise.all([a.stop(), b.stop()]);
    });

    test('a request larger than the whole budget never fits; several tenants are taken all or none', async () => {
      const { a, b } = await cluster(backend, { push: 10 });
      const tooLarge = await a.takeRate('push', one('acme', 11));
      assert.ok(tooLarge?.tooLarge);
      assert.equal(tooLarge.retryAfterMs, undefined);
      assert.equal(await a.takeRate('push', one('full', 10)), undefined);
      const refused = await a.takeRate(
        'push',
        new Map([
          ['acme', 4],
          ['full', 1],
        ]),
      );
      assert.equal(refused?.tenant, 'full');
      // Nothing was taken from acme: its whole budget is still there.
      assert.equal(await b.takeRate('push', one('acme', 10)), undefined);
      await Promise.all([a.stop(), b.stop()]);
    });

    test('a resent take answers its first result and takes nothing again', async () => {
      const { a, redis } = await cluster(backend, { push: 3 });
      const script = scriptNamed(loadLimitScripts('key'), 'rate-take');
      const args = ['request-1', 'push', 3, tenantKey('acme'), 2];
      assert.deepEqual(await runScript(redis, script, [a.base], args), [1]);
      assert.deepEqual(await runScript(redis, script, [a.base], args), [1]);
      // Only 2 of 3 taken: one unit is left, not none.
      assert.equal(await a.takeRate('push', one('acme')), undefined);
      assert.ok(await a.takeRate('push', one('acme')));
      await a.stop();
    });

    test('in-flight slots: reservations, settle, acks, lease expiry and extension', async () => {
      const { a, b, clock } = await cluster(backend, { inflight: 3 });
      const first = await a.reserveInFlight('acme', 'lease-1', 2);
      assert.deepEqual(first, { granted: 2 });
      // The same lease id again (a resend) answers the same reservation.
      assert.deepEqual(await a.reserveInFlight('acme', 'lease-1', 2), { granted: 2 });
      assert.deepEqual(await b.reserveInFlight('acme', 'lease-2', 5), { granted: 1 });
      const refused = await b.reserveInFlight('acme', 'lease-3', 1);
      assert.ok(isRefusal(refused));
      assert.equal(refused.retryAfterMs, 30_000);
      // lease-2 leased nothing: its slot comes back.
      await b.settleInFlight('acme', 'lease-2', 0, 0, []);
      await a.settleInFlight('acme', 'lease-1', 2, START + 60_000, [{ partitionId: 'p1', group: 'g' }]);
      assert.deepEqual(await b.reserveInFlight('acme', 'lease-3', 4), { granted: 1 });
      await b.settleInFlight('acme', 'lease-3', 1, START + 10_000, [
        { partitionId: 'p2', group: '__QUEUE_MODE__' },
      ]);
      assert.ok(isRefusal(await a.reserveInFlight('acme', 'lease-4', 1)));
      // An ack (on either node) frees its message's slot, once.
      const ack = { partitionId: 'p1', group: 'g', transactionId: 't1' };
      await b.ackInFlight([ack]);
      await a.ackInFlight([ack]);
      assert.deepEqual(await a.reserveInFlight('acme', 'lease-4', 5), { granted: 1 });
      await a.settleInFlight('acme', 'lease-4', 1, START + 10_000, [{ partitionId: 'p3', group: 'g' }]);
      // lease-3 and lease-4 expire at START+10 s; lease-1 is extended past it.
      await a.extendInFlight('lease-4', START + 20_000);
      await clock.advance(10_000);
      assert.deepEqual(await a.reserveInFlight('acme', 'lease-5', 5), { granted: 1 });
      await clock.advance(10_000);
      assert.deepEqual(await a.reserveInFlight('acme', 'lease-6', 5), { granted: 1 });
      const usage = await a.usage('inflight');
      assert.deepEqual(usage, [{ tenant: 'acme', used: 3, limit: 3 }]);
      await Promise.all([a.stop(), b.stop()]);
    });

    test('slots: exact across nodes, given back on release, freed when a killed node lease expires', async () => {
      const { a, clock } = await cluster(backend, { subscriptions: 2 }, { slotLeaseMs: 3000 });
      // Node b has its own connection: killing it is losing that connection.
      const connection = await backend.connect();
      const b = new TenantLimits({
        redis: connection,
        prefix: a.base.slice(0, -'{limits}:'.length),
        defaults: { subscriptions: 2 },
        nodeId: 'node-b',
        clock,
        scriptClock: 'key',
        slotLeaseMs: 3000,
      });
      await b.start();
      const first = await a.acquireSlot('subscriptions', 'alice');
      const second = await b.acquireSlot('subscriptions', 'alice');
      assert.ok(first && !isRefusal(first) && second && !isRefusal(second));
      const refused = await a.acquireSlot('subscriptions', 'alice');
      assert.ok(isRefusal(refused));
      assert.equal(refused.limit, 2);
      // Another subject has its own slots.
      assert.ok(!isRefusal(await b.acquireSlot('subscriptions', 'bob')));
      first.release();
      await a.renew();
      assert.ok(!isRefusal(await a.acquireSlot('subscriptions', 'alice')));
      assert.ok(isRefusal(await a.acquireSlot('subscriptions', 'alice')));
      // Node b is killed: no release, no renewal.
      connection.disconnect();
      await clock.advance(2999);
      assert.ok(isRefusal(await a.acquireSlot('subscriptions', 'alice')));
      await clock.advance(1);
      assert.ok(!isRefusal(await a.acquireSlot('subscriptions', 'alice')));
      assert.deepEqual(
        (await a.usage('subscriptions')).map(({ tenant, used }) => ({ tenant, used })),
        [
          { tenant: 'alice', used: 2 },
          { tenant: 'bob', used: 0 },
        ],
      );
      // A node that stops gives its slots back at once.
      await a.stop();
      const c = new TenantLimits({
        redis: track(connection.duplicate()),
        prefix: a.base.slice(0, -'{limits}:'.length),
        defaults: { subscriptions: 2 },
        nodeId: 'node-c',
        clock,
        scriptClock: 'key',
      });
      await c.start();
      assert.ok(!isRefusal(await c.acquireSlot('subscriptions', 'alice')));
      assert.ok(!isRefusal(await c.acquireSlot('subscriptions', 'alice')));
      await c.stop();
      await b.stop().catch(() => undefined);
    });

    test('with every default off, only tenants with an override are counted', async () => {
      const { a, b } = await cluster(backend, {});
      assert.equal(a.applies('push', 'acme'), false);
      for (let i = 0; i < 5; i++) assert.equal(await a.takeRate('push', one('acme', 1000)), undefined);
      await a.setOverride('push', 'acme', 2);
      assert.equal(a.applies('push', 'acme'), true);
      assert.deepEqual(await b.overrides(), [{ kind: 'push', tenant: 'acme', limit: 2 }]);
      await b.start();
      assert.equal(await b.takeRate('push', one('acme', 2)), undefined);
      assert.equal((await a.takeRate('push', one('acme')))?.limit, 2);
      assert.equal(await a.takeRate('push', one('beta', 1000)), undefined);
      // A zero override stops a tenant.
      await a.setOverride('inflight', 'beta', 0);
      assert.ok(isRefusal(await a.reserveInFlight('beta', 'lease-1', 1)));
      await a.setOverride('inflight', 'beta', null);
      assert.equal(await a.reserveInFlight('beta', 'lease-1', 1), undefined);
      await Promise.all([a.stop(), b.stop()]);
    });
  });
}

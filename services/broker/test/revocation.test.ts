/*
 * Token revocation on the broker (issue #24 item 3; docs/security.md, "Revocation"): the admin
 * routes under /api/v1/system/revocations, Queen-style errors, and a revoked token refused with
 * 401 on every node within one poll of the node clock. Two nodes on one Redis prefix; the
 * embedded backend too.
 */
import assert from 'node:assert/strict';
import { createHmac } from 'node:crypto';
import { after, describe, it } from 'node:test';
import { KeyClock, REVOCATION_POLL_INTERVAL_MS } from '@herald/redis';
import { uniquePrefix } from '@herald/testkit';
import type { Broker } from '../src/index.js';
import { type Backend, client, startTestBroker } from './helpers.js';

const SECRET = 'broker-revocation-test-secret-0123456789';
const PATH = '/api/v1/system/revocations';

function sign(payload: Record<string, unknown>): string {
  const encode = (value: unknown) => Buffer.from(JSON.stringify(value)).toString('base64url');
  const unsigned = `${encode({ alg: 'HS256', typ: 'JWT' })}.${encode(payload)}`;
  return `${unsigned}.${createHmac('sha256', SECRET).update(unsigned).digest('base64url')}`;
}

const ADMIN = sign({ sub: 'operator', role: 'admin', jti: 'operator-token' });

const brokers: Broker[] = [];
after(async () => {
  for (const broker of brokers) await broker.close();
});

async function node(backend: Backend, clock: KeyClock, prefix?: string): Promise<Broker> {
  const broker = await startTestBroker(
    backend,
    { JWT_ENABLED: 'true', JWT_SECRET: SECRET, ...(prefix ? { BROKER_KEY_PREFIX: prefix } : {}) },
    clock,
  );
  brokers.push(broker);
  return broker;
}

/** The status of an admin read with this token: the probe of whether a node accepts it. */
async function statusWith(broker: Broker, token: string): Promise<number> {
  return (await client(broker.url, token).call('GET', PATH)).status;
}

describe('revocation across two broker nodes on Redis', () => {
  it('a token revoked on node A is refused by A at once and by B after one poll', async () => {
    const clock = new KeyClock(Date.now());
    const prefix = uniquePrefix('broker-revocation');
    const nodeA = await node('redis', clock, prefix);
    const nodeB = await node('redis', clock, prefix);
    const victimExp = Math.floor(Date.now() / 1000) + 600;
    const victim = sign({ sub: 'alice', role: 'admin', jti: 'victim-1', exp: victimExp });
    assert.deepEqual([await statusWith(nodeA, victim), await statusWith(nodeB, victim)], [200, 200]);

    const added = await client(nodeA.url, ADMIN).call('POST', PATH, { token: victim });
    assert.equal(added.status, 201);
    assert.equal((added.body as { id: string }).id, 'jti:victim-1');
    const refused = await client(nodeA.url, victim).call('GET', PATH);
    assert.equal(refused.status, 401);
    assert.deepEqual(refused.body, { error: 'Token has been revoked' });
    assert.equal(refused.headers.get('www-authenticate'), 'Bearer error="invalid_token"');

    await clock.advance(REVOCATION_POLL_INTERVAL_MS);
    await nodeB.revocations.settled();
    assert.deepEqual([await statusWith(nodeA, victim), await statusWith(nodeB, victim)], [401, 401]);

    // A sub entry: every token of that sub issued before its time (and any without iat).
    const issuedAt = Math.floor(clock.now() / 1000) - 5;
    const older = sign({ sub: 'bob', role: 'read-only', iat: issuedAt - 5 });
    const newer = sign({ sub: 'bob', role: 'admin', iat: issuedAt + 1 });
    const bySub = await client(nodeB.url, ADMIN).call('POST', PATH, { sub: 'bob', before: issuedAt * 1000 });
    assert.equal(bySub.status, 201);
    await clock.advance(REVOCATION_POLL_INTERVAL_MS);
    await nodeA.revocations.settled();
    for (const broker of [nodeA, nodeB]) {
      assert.equal(await statusWith(broker, older), 401);
      assert.equal(await statusWith(broker, newer), 200);
    }

    const listed = await client(nodeA.url, ADMIN).call('GET', PATH);
    assert.deepEqual(listed.body, {
      revocations: [
        // The token's exp: the entry goes when the token would have.
        { id: 'jti:victim-1', kind: 'jti', jti: 'victim-1', expiresAt: victimExp * 1000 },
        { id: 'sub:bob', kind: 'sub', sub: 'bob', before: issuedAt * 1000 },
      ],
    });
    assert.equal((await client(nodeA.url, ADMIN).call('DELETE', `${PATH}/jti:victim-1`)).status, 204);
    assert.equal(await statusWith(nodeA, victim), 200);
  });
});

describe('revocation on the embedded backend', () => {
  it('validates bodies with Queen-style errors and lets an entry expire', async () => {
    const clock = new KeyClock(Date.now());
    const broker = await node('memory', clock);
    const api = client(broker.url, ADMIN);
    // [body, message]
    // biome-ignore format: a table, one case per line
    const refused: readonly (readonly [unknown, RegExp])[] = [
      [{ kind: 'session' }, /unknown field|give exactly one/],
      [{}, /give exactly one of jti, sub or token/],
      [{ jti: 'x'.repeat(257) }, /jti exceeds 256 characters/],
      [{ sub: 'bob', before: -1 }, /before must be a time/],
      [{ token: sign({ sub: 'no-jti' }) }, /the token has no jti claim/],
      [[1, 2], /JSON object/],
    ];
    for (const [body, message] of refused) {
      const answer = await api.call('POST', PATH, body);
      assert.equal(answer.status, 400, JSON.stringify(body));
      assert.match((answer.body as { error: string }).error, message);
    }
    const tooLarge = await api.call('POST', PATH, { token: 'x'.repeat(200 * 1024) });
    assert.equal(tooLarge.status, 413);

    const reader = sign({ sub: 'carol', role: 'read-only', jti: 'reader-1' });
    const readerApi = client(broker.url, reader);
    assert.equal((await readerApi.call('GET', PATH)).status, 403); // admin routes
    assert.equal((await readerApi.call('GET', '/api/v1/resources/queues')).status, 200);
    const added = await api.call('POST', PATH, { jti: 'reader-1', expiresAt: clock.now() + 60_000 });
    assert.equal(added.status, 201);
    assert.equal((await readerApi.call('GET', '/api/v1/resources/queues')).status, 401);
    await clock.advance(60_000);
    assert.equal((await readerApi.call('GET', '/api/v1/resources/queues')).status, 200);
    assert.deepEqual((await api.call('GET', PATH)).body, { revocations: [] });
  });
});

/*
 * Token revocation on the hub (issue #24 item 3; docs/security.md, "Revocation"): the admin
 * routes, a revoked token refused with 401 on every node within one poll of the node clock, and
 * the streams opened with it closed. Two nodes on one Redis prefix; the in-process backend too.
 */
import assert from 'node:assert/strict';
import { after, describe, it } from 'node:test';
import { KeyClock, REVOCATION_POLL_INTERVAL_MS } from '@herald/redis';
import { uniquePrefix } from '@herald/testkit';
import type { CloseReason } from '../src/subscriber.js';
import {
  type Backend,
  cleanupRedis,
  publish,
  publisherToken,
  SECURE,
  SseStream,
  SUBSCRIBER_SECRET,
  signToken,
  startTestHub,
  type TestHub,
} from './helpers.js';

const TOPIC = 'https://example.com/books/1';
const ADMIN = publisherToken([], { herald: { admin: true } });

const hubs: TestHub[] = [];
after(async () => {
  for (const hub of hubs) await hub.close();
  await cleanupRedis();
});

async function node(backend: Backend, clock: KeyClock, prefix?: string): Promise<TestHub> {
  const hub = await startTestHub(
    backend,
    { MERCURE_HEARTBEAT: '0', ...(prefix ? { MERCURE_REDIS_PREFIX: prefix } : {}) },
    { clock },
  );
  hubs.push(hub);
  return hub;
}

function subscriberToken(claims: Record<string, unknown>): string {
  return signToken({ mercure: { subscribe: [{ match: TOPIC }] }, ...claims }, SUBSCRIBER_SECRET);
}

function subscribe(hub: TestHub, token: string): Promise<SseStream> {
  return SseStream.open(`${hub.url}?match=${encodeURIComponent(TOPIC)}`, {
    authorization: `Bearer ${token}`,
  });
}

async function admin(
  hub: TestHub,
  method: 'GET' | 'POST' | 'DELETE',
  options: { body?: unknown; path?: string; token?: string | null } = {},
): Promise<{ status: number; body: string; challenge: string | null }> {
  const token = options.token === undefined ? ADMIN : options.token;
  const response = await fetch(`${hub.origin}/herald/admin/revocations${options.path ?? ''}`, {
    method,
    headers: {
      ...SECURE,
      ...(token ? { authorization: `Bearer ${token}` } : {}),
      ...(options.body !== undefined ? { 'content-type': 'application/json' } : {}),
    },
    ...(options.body !== undefined ? { body: JSON.stringify(options.body) } : {}),
  });
  return {
    status: response.status,
    body: await response.text(),
    challenge: response.headers.get('www-authenticate'),
  };
}

/** Resolves with the reason of the next stream this node closes. */
function nextClose(hub: TestHub): Promise<CloseReason> {
  return new Promise((resolve) =>
    hub.server.hub.events.once('subscriber-closed', ({ reason }: { reason: CloseReason }) => resolve(reason)),
  );
}

async function assertRefused(hub: TestHub, token: string): Promise<void> {
  const refused = await subscribe(hub, token);
  assert.equal(refused.status, 401);
  assert.equal(refused.body, 'Token has been revoked');
  assert.match(String(refused.headers['www-authenticate']), /^Bearer error="invalid_token"/);
}

async function assertAccepted(hub: TestHub, token: string): Promise<void> {
  const stream = await subscribe(hub, token);
  assert.equal(stream.status, 200);
  stream.close();
}

describe('revocation across two hub nodes on Redis', () => {
  it('a jti entry added on node A closes node B stream at its next poll; both nodes then answer 401', async () => {
    const clock = new KeyClock(Date.now());
    const prefix = uniquePrefix('hub-revocation');
    const nodeA = await node('redis', clock, prefix);
    const nodeB = await node('redis', clock, prefix);
    const token = subscriberToken({ jti: 'token-jti-1', sub: 'alice' });
    const stream = await subscribe(nodeB, token);
    assert.equal(stream.status, 200);
    const closed = nextClose(nodeB);

    const added = await admin(nodeA, 'POST', { body: { jti: 'token-jti-1' } });
    assert.equal(added.status, 201);
    assert.deepEqual(JSON.parse(added.body), { id: 'jti:token-jti-1', kind: 'jti', jti: 'token-jti-1' });
    // The node that took the call applies it before answering.
    await assertRefused(nodeA, token);
    assert.equal(stream.ended, false);

    await clock.advance(REVOCATION_POLL_INTERVAL_MS);
    assert.equal(await closed, 'revoked');
    await stream.closed();
    await assertRefused(nodeB, token);
    await assertRefused(nodeA, token);
    // Another token of the same sub is not covered by a jti entry.
    await assertAccepted(nodeB, subscriberToken({ jti: 'token-jti-2', sub: 'alice' }));

    const listed = await admin(nodeB, 'GET');
    assert.equal(listed.status, 200);
    assert.deepEqual(JSON.parse(listed.body), {
      revocations: [{ id: 'jti:token-jti-1', kind: 'jti', jti: 'token-jti-1' }],
    });
    const removed = await admin(nodeB, 'DELETE', { path: '/jti%3Atoken-jti-1' });
    assert.equal(removed.status, 204);
    await assertAccepted(nodeB, token);
    await clock.advance(REVOCATION_POLL_INTERVAL_MS);
    await nodeA.server.hub.revocationWatcher.refresh();
    await assertAccepted(nodeA, token);
  });

  it('a sub entry covers the tokens of that sub issued before its time, and those without iat', async () => {
    const clock = new KeyClock(Date.now());
    const prefix = uniquePrefix('hub-revocation');
    const nodeA = await node('redis', clock, prefix);
    const nodeB = await node('redis', clock, prefix);
    // Whole seconds in the past: the verifier refuses an iat in the future.
    const cutOff = Math.floor(clock.now() / 1000) - 5;
    const older = subscriberToken({ sub: 'bob', iat: cutOff - 5 });
    const withoutIat = subscriberToken({ sub: 'bob' });
    const newer = subscriberToken({ sub: 'bob', iat: cutOff + 1 });
    const olderStream = await subscribe(nodeB, older);
    const noIatStream = await subscribe(nodeB, withoutIat);
    const newerStream = await subscribe(nodeB, newer);
    assert.deepEqual([olderStream.status, noIatStream.status, newerStream.status], [200, 200, 200]);
    const closes: CloseReason[] = [];
    nodeB.server.hub.events.on('subscriber-closed', ({ reason }: { reason: CloseReason }) =>
      closes.push(reason),
    );

    const added = await admin(nodeA, 'POST', { body: { sub: 'bob', before: cutOff * 1000 } });
    assert.equal(added.status, 201);
    await clock.advance(REVOCATION_POLL_INTERVAL_MS);
    await olderStream.closed();
    await noIatStream.closed();
    assert.deepEqual(closes, ['revoked', 'revoked']);
    assert.equal(newerStream.ended, false);
    for (const hub of [nodeA, nodeB]) {
      await assertRefused(hub, older);
      await assertRefused(hub, withoutIat);
      await assertAccepted(hub, newer);
    }
    newerStream.close();
  });
});

describe('revocation on the in-process backend', () => {
  it('refuses a revoked token to subscribe and to publish, until the entry expires', async () => {
    const clock = new KeyClock(Date.now());
    const hub = await node('memory', clock);
    const token = subscriberToken({ jti: 'short-lived' });
    const publisher = publisherToken([{ match: '*' }], { jti: 'publisher-1' });
    const stream = await subscribe(hub, token);
    const closed = nextClose(hub);

    const expiresAt = clock.now() + 60_000;
    const addedJti = await admin(hub, 'POST', { body: { jti: 'short-lived', expiresAt } });
    assert.equal(addedJti.status, 201);
    assert.equal(await closed, 'revoked');
    await stream.closed();
    await assertRefused(hub, token);
    assert.equal((await admin(hub, 'POST', { body: { token: publisher } })).status, 201);
    const refusedPublish = await publish(hub.url, { topic: TOPIC, data: 'x' }, { token: publisher });
    assert.equal(refusedPublish.status, 401);
    assert.equal(refusedPublish.body, 'Token has been revoked');

    await clock.advance(60_000);
    await assertAccepted(hub, token);
    const listed = JSON.parse((await admin(hub, 'GET')).body) as { revocations: { id: string }[] };
    assert.deepEqual(
      listed.revocations.map((entry) => entry.id),
      ['jti:publisher-1'],
    );
  });

  it('refuses admin calls without the admin claim, and malformed bodies with a clear 400', async () => {
    const hub = await node('memory', new KeyClock(Date.now()));
    const missing = await admin(hub, 'GET', { token: null });
    assert.equal(missing.status, 401);
    assert.match(String(missing.challenge), /^Bearer resource_metadata=/);
    const subscriberKey = await admin(hub, 'GET', { token: subscriberToken({ herald: { admin: true } }) });
    assert.equal(subscriberKey.status, 401);
    assert.match(String(subscriberKey.challenge), /^Bearer error="invalid_token"/);
    const notAdmin = await admin(hub, 'POST', { token: publisherToken(), body: { jti: 'x' } });
    assert.equal(notAdmin.status, 403);
    assert.equal(notAdmin.body, 'The token does not carry "herald": {"admin": true}');
    assert.match(String(notAdmin.challenge), /^Bearer error="insufficient_scope"/);

    // [body, status, message]
    // biome-ignore format: a table, one case per line
    const refused: readonly (readonly [unknown, RegExp])[] = [
      [{ kind: 'session', jti: 'x' }, /unknown field|kind "session" does not fit/],
      [{}, /give exactly one of jti, sub or token/],
      [{ jti: 'x', sub: 'y' }, /give exactly one of jti, sub or token/],
      [{ jti: 'x'.repeat(257) }, /jti exceeds 256 characters/],
      [{ sub: 'y', before: 'yesterday' }, /before must be a time/],
      [{ token: signToken({ sub: 'no-jti' }, SUBSCRIBER_SECRET) }, /the token has no jti claim/],
      [{ token: 'not-a-jwt' }, /not a compact JWT/],
      [{ jti: 'x', colour: 'red' }, /unknown field "colour"/],
    ];
    for (const [body, message] of refused) {
      const answer = await admin(hub, 'POST', { body });
      assert.equal(answer.status, 400, JSON.stringify(body));
      assert.match(answer.body, message);
    }
  });
});

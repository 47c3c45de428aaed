/* Auth over HTTP: the route classes and role sets of docs/auth.md, alg none, defaults, boot validation. */
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { after, before, describe, test } from 'node:test';
import type { Broker } from '@herald/broker';
import { SignJWT } from 'jose';
import { JWT_TEST_SECRET, MAIN, startJwtBroker } from './nodes.js';

const SECRET = JWT_TEST_SECRET;
let broker: Broker;

before(async () => {
  broker = await startJwtBroker();
});
after(() => broker.close());

function token(roles: string[], sub = 'user-1'): Promise<string> {
  return new SignJWT({ roles })
    .setProtectedHeader({ alg: 'HS256' })
    .setSubject(sub)
    .setExpirationTime('5m')
    .sign(new TextEncoder().encode(SECRET));
}

async function status(method: string, path: string, bearer?: string, body?: unknown): Promise<number> {
  const headers: Record<string, string> = {};
  if (bearer) headers.authorization = `Bearer ${bearer}`;
  if (body !== undefined) headers['content-type'] = 'application/json';
  const response = await fetch(broker.url + path, {
    method,
    headers,
    ...(body !== undefined ? { body: JSON.stringify(body) } : {}),
  });
  await response.arrayBuffer();
  return response.status;
}

const DENIED = new Set([401, 403]);

// [method, path, body, class]
const ROUTES: [string, string, unknown, string][] = [
  ['GET', '/health', undefined, 'public'],
  ['GET', '/metrics', undefined, 'public'],
  ['GET', '/api/v1/resources/queues', undefined, 'read-only'],
  ['GET', '/api/v1/status', undefined, 'read-only'],
  ['GET', '/api/v1/dlq', undefined, 'read-only'],
  ['GET', '/api/v1/consumer-groups', undefined, 'read-only'],
  ['GET', '/api/v1/traces/names', undefined, 'read-only'],
  ['POST', '/api/v1/push', { items: [{ queue: 'auth.q', payload: 1 }] }, 'write-only'],
  ['GET', '/api/v1/pop/queue/auth.none', undefined, 'read-write'],
  ['POST', '/api/v1/ack', { transactionId: 'x', partitionId: 'y' }, 'read-write'],
  [
    'POST',
    '/api/v1/transaction',
    { operations: [{ type: 'push', items: [{ queue: 'auth.t', payload: 1 }] }] },
    'read-write',
  ],
  ['POST', '/api/v1/configure', { queue: 'auth.c' }, 'read-write'],
  ['POST', '/api/v1/traces', { partitionId: 'p', transactionId: 't' }, 'read-write'],
  ['GET', '/api/v1/not-a-route', undefined, 'read-write'],
  ['GET', '/api/v1/system/maintenance', undefined, 'admin'],
  ['POST', '/api/v1/stats/refresh', undefined, 'admin'],
  ['DELETE', '/api/v1/resources/queues/auth.gone', undefined, 'admin'],
  ['DELETE', '/api/v1/consumer-groups/nobody', undefined, 'admin'],
];

// Which token roles pass each class (role set, not ladder).
const PASSES: Record<string, string[]> = {
  public: ['none', 'read-only', 'write-only', 'read-write', 'admin'],
  'read-only': ['read-only', 'read-write', 'admin'],
  'write-only': ['write-only', 'read-write', 'admin'],
  'read-write': ['read-write', 'admin'],
  admin: ['admin'],
};

describe('route classes and role sets', () => {
  for (const role of ['none', 'read-only', 'write-only', 'read-write', 'admin']) {
    test(`token with role ${role}`, async () => {
      const bearer = role === 'none' ? undefined : await token([role]);
      for (const [method, path, body, level] of ROUTES) {
        const code = await status(method, path, bearer, body);
        const shouldPass = (PASSES[level] as string[]).includes(role);
        if (shouldPass) assert.ok(!DENIED.has(code), `${role} ${method} ${path} (${level}) got ${code}`);
        else assert.equal(code, role === 'none' ? 401 : 403, `${role} ${method} ${path} (${level})`);
      }
    });
  }
});

test('errors are {"error":…} JSON with a Bearer challenge; alg none and a wrong signature are 401', async () => {
  const response = await fetch(`${broker.url}/api/v1/status`);
  assert.equal(response.status, 401);
  assert.match(response.headers.get('content-type') ?? '', /application\/json/);
  assert.equal(typeof ((await response.json()) as { error: string }).error, 'string');
  const none = `${Buffer.from('{"alg":"none","typ":"JWT"}').toString('base64url')}.${Buffer.from('{"roles":["admin"]}').toString('base64url')}.`;
  assert.equal(await status('GET', '/api/v1/status', none), 401);
  const forged = await new SignJWT({ roles: ['admin'] })
    .setProtectedHeader({ alg: 'HS256' })
    .sign(new TextEncoder().encode('another-secret-another-secret-xx'));
  assert.equal(await status('GET', '/api/v1/status', forged), 401);
  const bare = await token(['admin']);
  // RFC 6750 §3: missing token → bare challenge; bad token → invalid_token; too weak → insufficient_scope.
  // biome-ignore format: a table, one case per line
  const challenges: [string | undefined, string, number, string][] = [
    [undefined, '/api/v1/status', 401, 'Bearer'],
    [forged, '/api/v1/status', 401, 'Bearer error="invalid_token"'],
    [none, '/api/v1/status', 401, 'Bearer error="invalid_token"'],
    [await token(['write-only']), '/api/v1/status', 403, 'Bearer error="insufficient_scope"'],
    [await token(['read-write']), '/api/v1/system/maintenance', 403, 'Bearer error="insufficient_scope"'],
  ];
  for (const [bearer, path, code, challenge] of challenges) {
    const refused = await fetch(
      broker.url + path,
      bearer ? { headers: { authorization: `Bearer ${bearer}` } } : {},
    );
    assert.equal(refused.status, code, path);
    assert.equal(refused.headers.get('www-authenticate'), challenge, `${path} ${code}`);
    assert.equal(refused.headers.get('access-control-expose-headers'), 'WWW-Authenticate');
    assert.equal(typeof ((await refused.json()) as { error: unknown }).error, 'string');
  }
  const reply = await fetch(`${broker.url}/api/v1/status`, { headers: { authorization: bare } });
  assert.equal(reply.status, 200, 'a bare token without Bearer is accepted');
});

test('producerSub comes from the token sub, never from the body', async () => {
  const writer = await token(['write-only'], 'producer-7');
  const pushed = await fetch(`${broker.url}/api/v1/push`, {
    method: 'POST',
    headers: { authorization: `Bearer ${writer}`, 'content-type': 'application/json' },
    body: JSON.stringify({ items: [{ queue: 'auth.sub', payload: 1, producerSub: 'forged' }] }),
  });
  assert.equal(pushed.status, 201);
  const reader = await token(['read-write']);
  const popped = await fetch(`${broker.url}/api/v1/pop/queue/auth.sub`, {
    headers: { authorization: `Bearer ${reader}` },
  });
  const body = (await popped.json()) as { messages: { producerSub: string }[] };
  assert.equal(body.messages[0]?.producerSub, 'producer-7');
});

describe('boot validation is fatal and names what is missing', () => {
  const cases: [Record<string, string>, RegExp][] = [
    [{ JWT_ENABLED: 'true', JWT_ALGORITHM: 'HS256' }, /JWT_SECRET/],
    [{ JWT_ENABLED: 'true', JWT_ALGORITHM: 'auto' }, /JWT_SECRET.*JWT_PUBLIC_KEY.*JWT_JWKS_URL/],
    [{ JWT_ENABLED: 'true', JWT_ALGORITHM: 'RS256' }, /JWT_PUBLIC_KEY nor JWT_JWKS_URL/],
    [{ JWT_ENABLED: 'true', JWT_ALGORITHM: 'EdDSA' }, /JWT_PUBLIC_KEY nor JWT_JWKS_URL/],
    [{ JWT_ENABLED: 'true', JWT_ALGORITHM: 'ES256', JWT_SECRET: 'x' }, /JWT_ALGORITHM/],
    [{ JWT_ENABLD: 'true' }, /JWT_ENABLD/],
  ];
  for (const [environment, message] of cases) {
    test(JSON.stringify(environment), () => {
      const result = spawnSync(process.execPath, [MAIN], {
        env: { PATH: process.env.PATH ?? '', PORT: '1', HOST: '127.0.0.1', ...environment },
        encoding: 'utf8',
        timeout: 10_000,
      });
      assert.notEqual(result.status, 0);
      assert.match(result.stderr, message);
      assert.doesNotMatch(result.stdout + result.stderr, /listening/);
    });
  }
});

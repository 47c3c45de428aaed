import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { ConfigError, parseEnv } from '@herald/config';
import Fastify, { type FastifyInstance } from 'fastify';
import { brokerAuthPlugin } from '../src/broker-fastify.js';
import { brokerAuthSettings } from '../src/broker-settings.js';
import type { AuthFailureReason } from '../src/errors.js';
import { NOW_MS, NOW_S, SECRET, sign } from './support.js';

/** A broker-shaped app: one route per class of the seed's table, each echoing the identity. */
async function brokerApp(
  environment: Record<string, string>,
  failures: AuthFailureReason[] = [],
): Promise<FastifyInstance> {
  const app = Fastify({ logger: false });
  await app.register(brokerAuthPlugin, {
    settings: parseEnv(brokerAuthSettings, environment),
    now: () => NOW_MS,
    onFailure: (reason) => failures.push(reason),
  });
  const echo = async (request: {
    identity: { sub?: string; roles: ReadonlySet<string> };
    body?: unknown;
  }) => ({
    sub: request.identity.sub ?? null,
    roles: [...request.identity.roles].sort(),
  });
  app.get('/health', echo);
  app.get('/metrics', echo);
  app.get('/auth/me', echo);
  app.get('/api/v1/system/maintenance', echo);
  app.delete('/api/v1/resources/queues/:queue', echo);
  app.get('/api/v1/messages', echo);
  app.get('/api/v1/messages/:id', echo);
  app.post('/api/v1/push', async (request) => ({
    // Seed: `sub` is the only source of producerSub; a body value is ignored.
    producerSub: request.identity.sub ?? null,
  }));
  app.get('/api/v1/pop/queue/:queue', echo);
  app.post('/api/v1/ack', echo);
  await app.ready();
  return app;
}

async function token(claims: Record<string, unknown>): Promise<string> {
  return sign(claims, { alg: 'HS256', key: SECRET });
}

describe('broker auth plugin (JWT_ENABLED=true)', () => {
  let app: FastifyInstance;
  const failures: AuthFailureReason[] = [];
  before(async () => {
    app = await brokerApp({ JWT_ENABLED: 'true', JWT_SECRET: SECRET }, failures);
  });
  after(async () => {
    await app.close();
  });

  // [method, url, role claims or 'none', status, error text (for refusals)]
  // biome-ignore format: a table, one case per line
  const cases: readonly (readonly [string, string, Record<string, unknown> | 'none', number, string | undefined])[] = [
    // public and skipped: no token needed
    ['GET', '/health', 'none', 200, undefined],
    ['GET', '/metrics', 'none', 200, undefined],
    ['GET', '/auth/me', 'none', 200, undefined],
    // admin
    ['GET', '/api/v1/system/maintenance', { role: 'admin' }, 200, undefined],
    ['GET', '/api/v1/system/maintenance', { role: 'read-write' }, 403, 'Insufficient permissions'],
    ['GET', '/api/v1/%73ystem/maintenance', { role: 'read-write' }, 403, 'Insufficient permissions'],
    ['DELETE', '/api/v1/resources/queues/orders', { roles: ['read-write'] }, 403, 'Insufficient permissions'],
    ['DELETE', '/api/v1/resources/queues/orders', { roles: ['admin'] }, 200, undefined],
    ['GET', '/api/v1/system/maintenance', 'none', 401, 'Authentication required'],
    // read-only
    ['GET', '/api/v1/messages', { role: 'read-only' }, 200, undefined],
    ['GET', '/api/v1/messages/abc', { role: 'read-write' }, 200, undefined],
    ['GET', '/api/v1/messages', { role: 'write-only' }, 403, 'Insufficient permissions'],
    // write-only: the pure producer pushes and nothing else
    ['POST', '/api/v1/push', { role: 'write-only' }, 200, undefined],
    ['POST', '/api/v1/push', { role: 'read-only' }, 403, 'Insufficient permissions'],
    ['POST', '/api/v1/push', { role: 'admin' }, 200, undefined],
    ['GET', '/api/v1/pop/queue/orders', { role: 'write-only' }, 403, 'Insufficient permissions'],
    ['POST', '/api/v1/ack', { role: 'write-only' }, 403, 'Insufficient permissions'],
    // read-write
    ['GET', '/api/v1/pop/queue/orders', { role: 'read-write' }, 200, undefined],
    ['GET', '/api/v1/pop/queue/orders', { role: 'read-only' }, 403, 'Insufficient permissions'],
    ['POST', '/api/v1/ack', { roles: ['read-only', 'write-only'] }, 403, 'Insufficient permissions'],
    // unknown routes are read-write, never public: auth runs before the 404
    ['GET', '/no/such/route', 'none', 401, 'Authentication required'],
    ['GET', '/no/such/route', { role: 'read-only' }, 403, 'Insufficient permissions'],
    ['GET', '/no/such/route', { role: 'read-write' }, 404, undefined],
  ];
  for (const [method, url, claims, status, errorText] of cases) {
    const who = claims === 'none' ? 'no token' : JSON.stringify(claims);
    it(`${method} ${url} with ${who} → ${status}`, async () => {
      const headers =
        claims === 'none' ? {} : { authorization: `Bearer ${await token({ sub: 'u1', ...claims })}` };
      const response = await app.inject({ method: method as 'GET', url, headers });
      assert.equal(response.statusCode, status);
      if (errorText) {
        assert.equal(response.headers['content-type'], 'application/json');
        assert.deepEqual(response.json(), { error: errorText });
      }
    });
  }

  // [name, Authorization header, status, error text, reason]
  // biome-ignore format: a table, one case per line
  const invalid: readonly (readonly [string, () => Promise<string>, number, string, AuthFailureReason])[] = [
    ['a bad signature', async () => `Bearer ${await sign({ role: 'admin' }, { alg: 'HS256', key: 'not-the-secret-not-the-secret-!!' })}`, 401, 'Invalid token signature', 'bad_signature'],
    ['an expired token', async () => `Bearer ${await token({ role: 'admin', exp: NOW_S - 60 })}`, 401, 'Token has expired', 'expired'],
    ['another algorithm', async () => `Bearer ${await sign({ role: 'admin' }, { alg: 'HS512', key: SECRET })}`, 401, 'Unsupported token algorithm', 'alg_not_allowed'],
    ['garbage', async () => 'Bearer not-a-jwt', 401, 'Malformed token', 'malformed_token'],
  ];
  for (const [name, header, status, errorText, reason] of invalid) {
    it(`${name} → ${status} ${errorText}, reported as ${reason}`, async () => {
      failures.length = 0;
      const response = await app.inject({
        method: 'GET',
        url: '/api/v1/messages',
        headers: { authorization: await header() },
      });
      assert.equal(response.statusCode, status);
      assert.equal(response.headers['content-type'], 'application/json');
      assert.deepEqual(response.json(), { error: errorText });
      assert.deepEqual(failures, [reason]);
    });
  }

  it('producerSub comes from the token, never from the body', async () => {
    const response = await app.inject({
      method: 'POST',
      url: '/api/v1/push',
      headers: { authorization: `Bearer ${await token({ sub: 'svc-orders', role: 'write-only' })}` },
      payload: { items: [], producerSub: 'spoofed' },
    });
    assert.deepEqual(response.json(), { producerSub: 'svc-orders' });
  });

  it('a bare token without "Bearer" is accepted and the identity is decorated', async () => {
    const response = await app.inject({
      method: 'GET',
      url: '/api/v1/messages',
      headers: { authorization: await token({ sub: 'reader', roles: ['read-only', 'extra'] }) },
    });
    assert.deepEqual(response.json(), { sub: 'reader', roles: ['extra', 'read-only'] });
  });

  it('public routes get an empty identity even with a token', async () => {
    const response = await app.inject({
      method: 'GET',
      url: '/health',
      headers: { authorization: `Bearer ${await token({ sub: 'x', role: 'admin' })}` },
    });
    assert.deepEqual(response.json(), { sub: null, roles: [] });
  });
});

describe('broker auth plugin options', () => {
  it('JWT_ENABLED=false: every request passes with an empty identity, the header is not read', async () => {
    const app = await brokerApp({});
    const response = await app.inject({
      method: 'GET',
      url: '/api/v1/system/maintenance',
      headers: { authorization: 'Bearer garbage' },
    });
    assert.equal(response.statusCode, 200);
    assert.deepEqual(response.json(), { sub: null, roles: [] });
    await app.close();
  });

  it('skip paths are evaluated before the route level', async () => {
    const app = await brokerApp({
      JWT_ENABLED: 'true',
      JWT_SECRET: SECRET,
      JWT_SKIP_PATHS: '/api/v1/messages/',
    });
    const skipped = await app.inject({ method: 'GET', url: '/api/v1/messages/abc' });
    assert.equal(skipped.statusCode, 200);
    const exactOnly = await app.inject({ method: 'GET', url: '/api/v1/messages' });
    assert.equal(exactOnly.statusCode, 401);
    const healthNoLongerSkipped = await app.inject({ method: 'GET', url: '/health' });
    assert.equal(healthNoLongerSkipped.statusCode, 200, '/health is still public by the route table');
    await app.close();
  });

  it('a server-side key problem is a 500 with the seed text', async () => {
    const failures: AuthFailureReason[] = [];
    const app = await brokerApp(
      {
        JWT_ENABLED: 'true',
        JWT_ALGORITHM: 'auto',
        JWT_PUBLIC_KEY: '-----BEGIN PUBLIC KEY-----\nAAAA\n-----END PUBLIC KEY-----',
      },
      failures,
    );
    const response = await app.inject({
      method: 'GET',
      url: '/api/v1/messages',
      headers: { authorization: `Bearer ${await token({ role: 'admin' })}` },
    });
    assert.equal(response.statusCode, 500);
    assert.deepEqual(response.json(), { error: 'HS secret not configured' });
    assert.deepEqual(failures, ['key_not_configured']);
    await app.close();
  });

  // [name, environment, variable]
  // biome-ignore format: a table, one case per line
  const fatal: readonly (readonly [string, Record<string, string>, string])[] = [
    ['RS256 without key material', { JWT_ENABLED: 'true', JWT_ALGORITHM: 'RS256', JWT_SECRET: SECRET }, 'JWT_PUBLIC_KEY'],
    ['HS256 without key material', { JWT_ENABLED: 'true' }, 'JWT_SECRET'],
    ['an unknown algorithm', { JWT_ENABLED: 'true', JWT_ALGORITHM: 'PS256', JWT_SECRET: SECRET }, 'JWT_ALGORITHM'],
  ];
  for (const [name, environment, variable] of fatal) {
    it(`boot fails before listening: ${name}`, async () => {
      const app = Fastify({ logger: false });
      app.register(brokerAuthPlugin, { settings: parseEnv(brokerAuthSettings, environment) });
      await assert.rejects(
        async () => app.ready(),
        (error: unknown) => error instanceof ConfigError && error.variable === variable,
      );
      await app.close();
    });
  }
});

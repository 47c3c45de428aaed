import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { ConfigError, parseEnv } from '@herald/config';
import Fastify, { type FastifyInstance } from 'fastify';
import { bearerChallenge, brokerAuthPlugin } from '../src/broker-fastify.js';
import type { AccessLevel } from '../src/broker-routes.js';
import { brokerAuthSettings } from '../src/broker-settings.js';
import { AUTH_FAILURE_REASONS, AuthError, type AuthFailureReason } from '../src/errors.js';
import type { AuthLogger } from '../src/logger.js';
import {
  jwkOf,
  keys,
  NOW_MS,
  NOW_S,
  recordingLogger,
  SECRET,
  sign,
  startServer,
  type TestServer,
} from './support.js';

/** A broker-shaped app: one route per class of the broker's route table (docs/auth.md), each echoing the identity. */
async function brokerApp(
  environment: Record<string, string>,
  failures: AuthFailureReason[] = [],
  logger?: AuthLogger,
): Promise<FastifyInstance> {
  const app = Fastify({ logger: false });
  await app.register(brokerAuthPlugin, {
    settings: parseEnv(brokerAuthSettings, environment),
    now: () => NOW_MS,
    onFailure: (reason) => failures.push(reason),
    ...(logger ? { logger } : {}),
  });
  const echo = async (request: {
    identity: { sub?: string; roles: ReadonlySet<string> };
    body?: unknown;
  }) => ({
    sub: request.identity.sub ?? null,
    roles: [...request.identity.roles].sort(),
  });
  const level = (access: AccessLevel) => ({ config: { access } });
  app.get('/health', level('public'), echo);
  app.get('/metrics', level('public'), echo);
  app.get('/auth/me', level('public'), echo);
  app.get('/api/v1/system/maintenance', level('admin'), echo);
  app.delete('/api/v1/resources/queues/:queue', level('admin'), echo);
  app.get('/api/v1/messages', level('read-only'), echo);
  app.get('/api/v1/messages/:id', level('read-only'), echo);
  app.post('/api/v1/push', level('write-only'), async (request) => ({
    // Seed: `sub` is the only source of producerSub; a body value is ignored.
    producerSub: request.identity.sub ?? null,
  }));
  app.get('/api/v1/pop/queue/:queue', level('read-write'), echo);
  app.post('/api/v1/ack', level('read-write'), echo);
  // Not the table's level: the declaration is what counts, not a reading of the URL.
  app.get('/custom/declared-admin', level('admin'), echo);
  app.options('*', level('public'), async (_request, reply) => reply.code(204).send());
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
    // the level is the matched route's declaration, whatever the table would say of the path
    ['GET', '/custom/declared-admin', { role: 'read-write' }, 403, 'Insufficient permissions'],
    ['GET', '/custom/declared-admin', { role: 'admin' }, 200, undefined],
    ['GET', '/api/v1/%6Dessages', { role: 'read-only' }, 200, undefined],
    ['GET', '/api/v1/%73ystem/maintenance', { role: 'admin' }, 200, undefined],
    ['HEAD', '/api/v1/system/maintenance', { role: 'read-write' }, 403, undefined],
    ['HEAD', '/api/v1/messages', { role: 'read-only' }, 200, undefined],
    // CORS preflight: OPTIONS is declared public (docs/broker-configuration.md, "Authentication"), on any path
    ['OPTIONS', '/api/v1/push', 'none', 204, undefined],
    ['OPTIONS', '/api/v1/system/maintenance', 'none', 204, undefined],
    ['OPTIONS', '/no/such/route', 'none', 204, undefined],
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

  it('skip paths are evaluated before the route level, on the path the router matched', async () => {
    const app = await brokerApp({
      JWT_ENABLED: 'true',
      JWT_SECRET: SECRET,
      JWT_SKIP_PATHS: '/api/v1/messages/',
    });
    // [target, status]
    // biome-ignore format: a table, one case per line
    const cases: readonly (readonly [string, number])[] = [
      ['/api/v1/messages/abc', 200],
      ['/api/v1/%6Dessages/abc', 200], // the router reads it as /api/v1/messages/abc
      ['/api/v1/messages', 401], // the entry is a prefix of what is below it only
      ['/api/v1/pop/queue/x', 401],
      ['/health', 200], // still public by its own declaration
    ];
    for (const [url, status] of cases) {
      assert.equal((await app.inject({ method: 'GET', url })).statusCode, status, url);
    }
    await app.close();
  });

  it('explicit HS256 with only a public key: the server-side 500 Queen answers', async () => {
    const failures: AuthFailureReason[] = [];
    const app = await brokerApp(
      { JWT_ENABLED: 'true', JWT_ALGORITHM: 'HS256', JWT_PUBLIC_KEY: keys().rsa.publicPem },
      failures,
    );
    const response = await app.inject({
      method: 'GET',
      url: '/api/v1/messages',
      headers: { authorization: `Bearer ${await token({ role: 'admin' })}` },
    });
    assert.equal(response.statusCode, 500);
    assert.deepEqual(response.json(), { error: 'HS secret not configured' });
    assert.equal(response.headers['www-authenticate'], undefined, 'a server fault is not a challenge');
    assert.deepEqual(failures, ['key_not_configured']);
    await app.close();
  });

  // [name, token alg] against auto mode with only a JWKS (issue #8, defect 7): the token names a
  // family the deployment holds no key for.
  for (const alg of ['HS256', 'HS512']) {
    it(`auto mode with only a JWKS refuses an ${alg} token with 401 and logs no error`, async () => {
      const jwks: TestServer = await startServer();
      jwks.serveJson({ keys: [jwkOf(keys().rsa.publicKey, { kid: 'rsa' })] });
      const failures: AuthFailureReason[] = [];
      const logger = recordingLogger();
      const app = await brokerApp(
        { JWT_ENABLED: 'true', JWT_ALGORITHM: 'auto', JWT_JWKS_URL: jwks.url },
        failures,
        logger,
      );
      try {
        const hs = await sign({ role: 'admin' }, { alg, key: SECRET });
        const response = await app.inject({
          method: 'GET',
          url: '/api/v1/messages',
          headers: { authorization: `Bearer ${hs}` },
        });
        assert.equal(response.statusCode, 401);
        assert.deepEqual(response.json(), { error: 'Unsupported token algorithm' });
        assert.equal(response.headers['www-authenticate'], 'Bearer error="invalid_token"');
        assert.deepEqual(failures, ['alg_not_allowed']);
        assert.deepEqual(logger.messages('error'), []);
        // The JWKS still verifies the family it holds.
        const rs = await sign(
          { role: 'admin', sub: 'rs' },
          { alg: 'RS256', key: keys().rsa.privateKey, kid: 'rsa' },
        );
        const accepted = await app.inject({
          method: 'GET',
          url: '/api/v1/messages',
          headers: { authorization: `Bearer ${rs}` },
        });
        assert.equal(accepted.statusCode, 200);
      } finally {
        await app.close();
        await jwks.close();
      }
    });
  }

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

describe('RFC 6750 challenges on every refusal', () => {
  let app: FastifyInstance;
  before(async () => {
    app = await brokerApp({ JWT_ENABLED: 'true', JWT_SECRET: SECRET });
  });
  after(async () => {
    await app.close();
  });

  // [name, Authorization header or none, url, status, WWW-Authenticate]
  // biome-ignore format: a table, one case per line
  const cases: readonly (readonly [string, () => Promise<string | undefined>, string, number, string])[] = [
    ['no token (no error attribute, RFC 6750 §3.1)', async () => undefined, '/api/v1/messages', 401, 'Bearer'],
    ['an empty Bearer', async () => 'Bearer ', '/api/v1/messages', 401, 'Bearer'],
    ['garbage', async () => 'Bearer not-a-jwt', '/api/v1/messages', 401, 'Bearer error="invalid_token"'],
    ['an expired token', async () => `Bearer ${await token({ role: 'admin', exp: NOW_S - 60 })}`, '/api/v1/messages', 401, 'Bearer error="invalid_token"'],
    ['a forged signature', async () => `Bearer ${await sign({ role: 'admin' }, { alg: 'HS256', key: 'not-the-secret-not-the-secret-!!' })}`, '/api/v1/messages', 401, 'Bearer error="invalid_token"'],
    ['a role too weak', async () => `Bearer ${await token({ role: 'read-only' })}`, '/api/v1/system/maintenance', 403, 'Bearer error="insufficient_scope"'],
    ['a role too weak on an unknown route', async () => `Bearer ${await token({ role: 'write-only' })}`, '/no/such/route', 403, 'Bearer error="insufficient_scope"'],
  ];
  for (const [name, header, url, status, challenge] of cases) {
    it(`${name} → ${status} ${challenge}`, async () => {
      const authorization = await header();
      const response = await app.inject({
        method: 'GET',
        url,
        headers: authorization === undefined ? {} : { authorization },
      });
      assert.equal(response.statusCode, status);
      assert.equal(response.headers['www-authenticate'], challenge);
      assert.equal(typeof response.json().error, 'string', 'the body keeps its {"error":…} shape');
    });
  }

  it('every failure reason maps to the challenge its status calls for', () => {
    for (const reason of AUTH_FAILURE_REASONS) {
      const error = new AuthError(reason);
      const challenge = bearerChallenge(error);
      if (error.status === 401) assert.match(challenge ?? '', /^Bearer( error="invalid_token")?$/, reason);
      else if (error.status === 403) assert.equal(challenge, 'Bearer error="insufficient_scope"', reason);
      else assert.equal(challenge, undefined, reason);
    }
  });
});

describe('every route declares its access level', () => {
  for (const jwt of ['true', 'false']) {
    it(`a route without config.access is refused at registration (JWT_ENABLED=${jwt})`, async () => {
      const app = Fastify({ logger: false });
      await app.register(brokerAuthPlugin, {
        settings: parseEnv(brokerAuthSettings, { JWT_ENABLED: jwt, JWT_SECRET: SECRET }),
      });
      assert.throws(
        () => app.get('/api/v1/forgotten', async () => ({})),
        /GET \/api\/v1\/forgotten declares no access level/,
      );
      assert.throws(
        () => app.post('/api/v1/typo', { config: { access: 'Admin' as AccessLevel } }, async () => ({})),
        /declares no access level/,
      );
      app.get('/api/v1/declared', { config: { access: 'read-only' } }, async () => ({}));
      await app.close();
    });
  }
});

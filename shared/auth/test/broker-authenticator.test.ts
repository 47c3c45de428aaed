import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { parseEnv } from '@herald/config';
import {
  type BrokerAuthenticatorOptions,
  bearerToken,
  createBrokerAuthenticator,
} from '../src/broker-authenticator.js';
import { brokerAuthSettings } from '../src/broker-settings.js';
import type { AuthFailureReason } from '../src/errors.js';
import {
  fakeClock,
  jwkOf,
  keys,
  NOW_MS,
  NOW_S,
  recordingLogger,
  rejectsWith,
  SECRET,
  sign,
  startServer,
  type TestServer,
  unsignedToken,
} from './support.js';

let server: TestServer;
before(async () => {
  server = await startServer();
  const { rsa, ed25519, ecP256 } = keys();
  server.serveJson({
    keys: [
      jwkOf(ecP256.publicKey, { kid: 'ec' }), // the broker skips EC keys (seed: two key types)
      jwkOf(rsa.publicKey, { kid: 'rsa' }),
      jwkOf(ed25519.publicKey, { kid: 'ed' }),
    ],
  });
});
after(async () => {
  await server.close();
});

function authenticatorFor(environment: Record<string, string>, options: BrokerAuthenticatorOptions = {}) {
  return createBrokerAuthenticator(parseEnv(brokerAuthSettings, { JWT_ENABLED: 'true', ...environment }), {
    now: () => NOW_MS,
    ...options,
  });
}

/** A token of any supported alg, signed with the key the JWKS (or secret) holds for it. */
async function tokenFor(
  alg: string,
  claims: Record<string, unknown> = { sub: 'producer-1' },
): Promise<string> {
  const { rsa, ed25519, ecP256 } = keys();
  if (alg.startsWith('HS')) return sign(claims, { alg, key: SECRET });
  if (alg.startsWith('RS')) return sign(claims, { alg, key: rsa.privateKey, kid: 'rsa' });
  if (alg === 'ES256') return sign(claims, { alg, key: ecP256.privateKey, kid: 'ec' });
  return sign(claims, { alg, key: ed25519.privateKey, kid: 'ed' });
}

describe('algorithm dispatch: JWT_ALGORITHM names the set a token may declare', () => {
  // [JWT_ALGORITHM, token alg, accepted]
  // biome-ignore format: a table, one case per line
  const table: readonly (readonly [string, string, boolean])[] = [
    ['HS256', 'HS256', true],
    ['HS256', 'HS384', false],
    ['HS256', 'RS256', false],
    ['HS384', 'HS384', true],
    ['HS384', 'HS256', false],
    ['HS512', 'HS512', true],
    ['HS512', 'HS384', false],
    ['RS256', 'RS256', true],
    ['RS256', 'RS384', true], // RS256 is the widest RSA setting
    ['RS256', 'RS512', true],
    ['RS256', 'HS256', false],
    ['RS256', 'EdDSA', false],
    ['RS384', 'RS384', true],
    ['RS384', 'RS256', false],
    ['RS384', 'RS512', false],
    ['RS512', 'RS512', true],
    ['RS512', 'RS384', false], // RS384 in RS512 mode: refused
    ['EdDSA', 'EdDSA', true],
    ['EdDSA', 'RS256', false],
    ['auto', 'HS256', true],
    ['auto', 'HS512', true],
    ['auto', 'RS384', true],
    ['auto', 'EdDSA', true],
    ['auto', 'ES256', false],
  ];
  for (const [configured, alg, accepted] of table) {
    it(`${configured} mode, ${alg} token → ${accepted ? 'accepted' : '401 Unsupported token algorithm'}`, async () => {
      const authenticator = authenticatorFor({
        JWT_ALGORITHM: configured,
        JWT_SECRET: SECRET,
        JWT_JWKS_URL: server.url,
      });
      await authenticator.ready();
      const pending = authenticator.authenticate(`Bearer ${await tokenFor(alg)}`);
      if (accepted) {
        assert.equal((await pending).sub, 'producer-1');
      } else {
        const error = await rejectsWith(pending, 'alg_not_allowed', 401);
        assert.equal(error.message, 'Unsupported token algorithm');
      }
      authenticator.close();
    });
  }

  it('alg none is refused in every mode', async () => {
    const authenticator = authenticatorFor({ JWT_ALGORITHM: 'auto', JWT_SECRET: SECRET });
    const error = await rejectsWith(
      authenticator.authenticate(unsignedToken({ role: 'admin' })),
      'alg_none',
      401,
    );
    assert.equal(error.message, 'Unsupported token algorithm');
  });

  it('an algorithm outside the set is refused before any key lookup (no JWKS fetch)', async () => {
    const clock = fakeClock();
    const authenticator = authenticatorFor(
      { JWT_ALGORITHM: 'RS512', JWT_JWKS_URL: server.url },
      { now: clock.now },
    );
    await authenticator.ready();
    clock.advance(10_000);
    const before = server.requests();
    await rejectsWith(authenticator.authenticate(await tokenFor('RS384', { sub: 'x' })), 'alg_not_allowed');
    assert.equal(server.requests(), before);
    authenticator.close();
  });
});

describe('algorithm confusion at the broker', () => {
  const pem = () => keys().rsa.publicPem;
  // [name, environment, expected reason, status, text]
  // biome-ignore format: a table, one case per line
  const cases: readonly (readonly [string, Record<string, string>, AuthFailureReason, number, string])[] = [
    ['RS256 mode', { JWT_ALGORITHM: 'RS256' }, 'alg_not_allowed', 401, 'Unsupported token algorithm'],
    // auto without a secret accepts no HS token at all: 401 before any key lookup (issue #8)
    ['auto mode without a secret', { JWT_ALGORITHM: 'auto' }, 'alg_not_allowed', 401, 'Unsupported token algorithm'],
    ['HS256 mode without a secret', { JWT_ALGORITHM: 'HS256' }, 'key_not_configured', 500, 'HS secret not configured'],
    ['auto mode with a (different) secret', { JWT_ALGORITHM: 'auto', JWT_SECRET: SECRET }, 'bad_signature', 401, 'Invalid token signature'],
  ];
  for (const [name, environment, reason, status, text] of cases) {
    it(`HS256 signed with the RSA public key PEM as secret, ${name} → ${status} ${text}`, async () => {
      const forged = await sign({ role: 'admin' }, { alg: 'HS256', key: pem() });
      const authenticator = authenticatorFor({ ...environment, JWT_PUBLIC_KEY: pem() });
      const error = await rejectsWith(authenticator.authenticate(`Bearer ${forged}`), reason, status);
      assert.equal(error.message, text);
    });
  }
});

describe('keys per token family', () => {
  const garbagePem = '-----BEGIN PUBLIC KEY-----\nbm90IGEga2V5IGF0IGFsbA==\n-----END PUBLIC KEY-----';
  // [name, environment, token alg, reason, status, text]
  // biome-ignore format: a table, one case per line
  const cases: readonly (readonly [string, Record<string, string>, string, AuthFailureReason, number, string])[] = [
    // Explicit modes keep the documented server-side 500s: the operator pinned a family it holds no key for.
    ['HS token, empty secret, HS256 mode', { JWT_ALGORITHM: 'HS256', JWT_JWKS_URL: 'http://127.0.0.1:1/jwks' }, 'HS256', 'key_not_configured', 500, 'HS secret not configured'],
    ['RS token, Ed25519 PEM, RS256 mode', { JWT_ALGORITHM: 'RS256', JWT_PUBLIC_KEY: keys().ed25519.publicPem }, 'RS256', 'invalid_key', 500, 'invalid RSA public key PEM'],
    ['EdDSA token, RSA PEM, EdDSA mode', { JWT_ALGORITHM: 'EdDSA', JWT_PUBLIC_KEY: keys().rsa.publicPem }, 'EdDSA', 'invalid_key', 500, 'invalid Ed public key PEM'],
    // auto accepts only the families it holds a key for: anything else is the client's 401 (issue #8).
    ['HS token, empty secret, auto mode', { JWT_ALGORITHM: 'auto', JWT_JWKS_URL: 'http://127.0.0.1:1/jwks' }, 'HS256', 'alg_not_allowed', 401, 'Unsupported token algorithm'],
    ['RS token, Ed25519 PEM, auto mode', { JWT_ALGORITHM: 'auto', JWT_PUBLIC_KEY: keys().ed25519.publicPem }, 'RS256', 'alg_not_allowed', 401, 'Unsupported token algorithm'],
    ['EdDSA token, RSA PEM, auto mode', { JWT_ALGORITHM: 'auto', JWT_PUBLIC_KEY: keys().rsa.publicPem }, 'EdDSA', 'alg_not_allowed', 401, 'Unsupported token algorithm'],
    ['RS token, PEM that does not parse, auto mode', { JWT_ALGORITHM: 'auto', JWT_PUBLIC_KEY: garbagePem }, 'RS256', 'invalid_key', 500, 'invalid RSA public key PEM'],
    ['RS token, PEM that does not parse', { JWT_ALGORITHM: 'RS256', JWT_PUBLIC_KEY: garbagePem }, 'RS256', 'invalid_key', 500, 'invalid RSA public key PEM'],
    ['EdDSA token, PEM that does not parse', { JWT_ALGORITHM: 'EdDSA', JWT_PUBLIC_KEY: garbagePem }, 'EdDSA', 'invalid_key', 500, 'invalid Ed public key PEM'],
    ['RS token, no PEM and no JWKS, auto mode', { JWT_ALGORITHM: 'auto', JWT_SECRET: SECRET }, 'RS256', 'alg_not_allowed', 401, 'Unsupported token algorithm'],
    ['EdDSA token, no PEM and no JWKS, auto mode', { JWT_ALGORITHM: 'auto', JWT_SECRET: SECRET }, 'EdDSA', 'alg_not_allowed', 401, 'Unsupported token algorithm'],
  ];
  for (const [name, environment, alg, reason, status, text] of cases) {
    it(`${name} → ${status} ${text}`, async () => {
      const authenticator = authenticatorFor(environment);
      const error = await rejectsWith(authenticator.authenticate(await tokenFor(alg)), reason, status);
      assert.equal(error.message, text);
      authenticator.close();
    });
  }

  it('a bad PEM never falls back to the JWKS endpoint', async () => {
    const before = server.requests();
    const authenticator = authenticatorFor({
      JWT_ALGORITHM: 'RS256',
      JWT_PUBLIC_KEY: garbagePem,
      JWT_JWKS_URL: server.url,
    });
    await authenticator.ready();
    await rejectsWith(authenticator.authenticate(await tokenFor('RS256')), 'invalid_key', 500);
    assert.equal(server.requests(), before);
  });

  // [PEM, logs an error at boot]
  // biome-ignore format: a table, one case per line
  const bootChecks: readonly (readonly [string, () => string, boolean])[] = [
    ['RSA', () => keys().rsa.publicPem, false],
    ['Ed25519', () => keys().ed25519.publicPem, false],
    ['EC P-256 (neither family the broker reads)', () => keys().ecP256.publicPem, true],
    ['garbage', () => garbagePem, true],
  ];
  for (const [name, pem, logged] of bootChecks) {
    it(`JWT_PUBLIC_KEY ${name}: ${logged ? 'an error is logged at boot' : 'no boot error'}`, () => {
      const logger = recordingLogger();
      authenticatorFor({ JWT_ALGORITHM: 'auto', JWT_PUBLIC_KEY: pem() }, { logger });
      assert.equal(logger.messages('error').length, logged ? 1 : 0);
    });
  }

  it('a PEM verifies RS and EdDSA tokens of its own family', async () => {
    const { rsa, ed25519 } = keys();
    const rsaAuthenticator = authenticatorFor({ JWT_ALGORITHM: 'RS256', JWT_PUBLIC_KEY: rsa.publicPem });
    assert.equal((await rsaAuthenticator.authenticate(await tokenFor('RS512'))).sub, 'producer-1');
    const edAuthenticator = authenticatorFor({ JWT_ALGORITHM: 'EdDSA', JWT_PUBLIC_KEY: ed25519.publicPem });
    assert.equal((await edAuthenticator.authenticate(await tokenFor('EdDSA'))).sub, 'producer-1');
  });
});

describe('JWKS at the broker', () => {
  it('a token without kid uses the first usable key (EC entries are skipped)', async () => {
    const authenticator = authenticatorFor({ JWT_ALGORITHM: 'RS256', JWT_JWKS_URL: server.url });
    await authenticator.ready();
    const token = await sign({ sub: 'no-kid' }, { alg: 'RS256', key: keys().rsa.privateKey });
    assert.equal((await authenticator.authenticate(token)).sub, 'no-kid');
    authenticator.close();
  });

  it('an unknown kid re-fetches at most once per 5 s, then 401 Unknown key ID', async () => {
    const clock = fakeClock();
    const authenticator = authenticatorFor(
      { JWT_ALGORITHM: 'RS256', JWT_JWKS_URL: server.url },
      { now: clock.now },
    );
    await authenticator.ready();
    const start = server.requests();
    const unknown = await sign({ sub: 'x' }, { alg: 'RS256', key: keys().rsa.privateKey, kid: 'gone' });
    clock.advance(5_000);
    const flood = Array.from({ length: 100 }, () =>
      rejectsWith(authenticator.authenticate(unknown), 'unknown_kid', 401),
    );
    await Promise.all(flood);
    await rejectsWith(authenticator.authenticate(unknown), 'unknown_kid');
    assert.equal(server.requests(), start + 1);
    authenticator.close();
  });
});

describe('claims', () => {
  it('identity: sub and roles from both role claims, remappable', async () => {
    const authenticator = authenticatorFor({
      JWT_SECRET: SECRET,
      JWT_ROLES_CLAIM: 'scope',
      JWT_ROLES_ARRAY_CLAIM: 'groups',
    });
    const identity = await authenticator.authenticate(
      `Bearer ${await tokenFor('HS256', { sub: 'svc-orders', scope: 'queen.write', groups: ['read-only'], role: 'admin' })}`,
    );
    assert.equal(identity.sub, 'svc-orders');
    assert.deepEqual([...identity.roles].sort(), ['queen.write', 'read-only']);
    assert.equal(identity.claims?.sub, 'svc-orders');
  });

  it('a token without sub has no sub', async () => {
    const identity = await authenticatorFor({ JWT_SECRET: SECRET }).authenticate(
      await tokenFor('HS256', { role: 'admin' }),
    );
    assert.equal(identity.sub, undefined);
  });

  // [name, claims, environment, expected reason or undefined]
  // biome-ignore format: a table, one case per line
  const temporal: readonly (readonly [string, Record<string, unknown>, Record<string, string>, AuthFailureReason | undefined])[] = [
    ['expired 30 s ago: inside the default 30 s skew', { exp: NOW_S - 30 }, {}, undefined],
    ['expired 31 s ago', { exp: NOW_S - 31 }, {}, 'expired'],
    ['nbf 31 s ahead', { nbf: NOW_S + 31 }, {}, 'not_yet_valid'],
    ['expired 5 s ago with JWT_CLOCK_SKEW=0', { exp: NOW_S - 5 }, { JWT_CLOCK_SKEW: '0' }, 'expired'],
    ['no exp at all', { sub: 'x' }, {}, undefined],
    ['JWT_ISSUER set, wrong iss', { iss: 'https://evil.example' }, { JWT_ISSUER: 'https://idp.example' }, 'issuer'],
    ['JWT_ISSUER set, right iss', { iss: 'https://idp.example' }, { JWT_ISSUER: 'https://idp.example' }, undefined],
    ['JWT_AUDIENCE set, wrong aud', { aud: ['other'] }, { JWT_AUDIENCE: 'queen' }, 'audience'],
    ['JWT_AUDIENCE set, right aud', { aud: ['other', 'queen'] }, { JWT_AUDIENCE: 'queen' }, undefined],
  ];
  for (const [name, claims, environment, reason] of temporal) {
    it(`${name} → ${reason ?? 'accepted'}`, async () => {
      const token = await sign(claims, { alg: 'HS256', key: SECRET, exp: null });
      const pending = authenticatorFor({ JWT_SECRET: SECRET, ...environment }).authenticate(token);
      if (reason) await rejectsWith(pending, reason, 401);
      else await pending;
    });
  }
});

describe('the Authorization header', () => {
  // [header, token or undefined]
  // biome-ignore format: a table, one case per line
  const cases: readonly (readonly [string | undefined, string | undefined])[] = [
    ['Bearer abc.def.ghi', 'abc.def.ghi'],
    ['bearer abc.def.ghi', 'abc.def.ghi'],
    ['BEARER abc.def.ghi', 'abc.def.ghi'],
    ['abc.def.ghi', 'abc.def.ghi'], // a bare token is accepted
    ['Bearer ', undefined],
    ['', undefined],
    [undefined, undefined],
  ];
  for (const [header, token] of cases) {
    it(`${JSON.stringify(header)} → ${token ?? 'no token'}`, () => {
      assert.equal(bearerToken(header), token);
    });
  }

  it('no token → 401 Authentication required', async () => {
    const error = await rejectsWith(
      authenticatorFor({ JWT_SECRET: SECRET }).authenticate(undefined),
      'missing_token',
      401,
    );
    assert.equal(error.message, 'Authentication required');
  });
});

import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { ConfigError, parseEnv } from '@herald/config';
import type { AuthFailureReason } from '../src/errors.js';
import {
  createMercureAuthenticator,
  type MercureAuthenticatorOptions,
  type MercureAuthRequest,
} from '../src/mercure-authenticator.js';
import type { TransportFacts } from '../src/mercure-request.js';
import { mercureAuthSettings } from '../src/mercure-settings.js';
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
} from './support.js';

const SUBSCRIBER_SECRET = 'another-secret-for-subscribers-only-32b';
const HUB = 'https://example.com/.well-known/mercure';
const TLS: TransportFacts = {
  encrypted: true,
  fromTrustedProxy: false,
  remoteIsLoopback: false,
  devMode: false,
};
const PLAIN: TransportFacts = { ...TLS, encrypted: false };

function authenticatorFor(environment: Record<string, string>, options: MercureAuthenticatorOptions = {}) {
  return createMercureAuthenticator(parseEnv(mercureAuthSettings, environment), {
    hubUrl: HUB,
    now: () => NOW_MS,
    ...options,
  });
}

const secrets = { MERCURE_PUBLISHER_JWT_KEY: SECRET, MERCURE_SUBSCRIBER_JWT_KEY: SUBSCRIBER_SECRET };

function request(
  headers: Record<string, string>,
  extra: Partial<MercureAuthRequest> = {},
): MercureAuthRequest {
  return { headers, transport: TLS, ...extra };
}

const seedSubscriberClaims = {
  sub: 'https://example.com/users/42',
  mercure: {
    subscribe: [{ match: 'https://example.com/users/42/:resource', matchType: 'URLPattern' }],
    payload: { user: 42 },
  },
};

describe('createMercureAuthenticator', () => {
  it('an anonymous request resolves to no claims', async () => {
    const result = await authenticatorFor(secrets).authenticate(request({}), 'subscriber');
    assert.deepEqual(result, {});
  });

  it('verifies a subscriber token and returns claims, source, exp and sub', async () => {
    const token = await sign(seedSubscriberClaims, { alg: 'HS256', key: SUBSCRIBER_SECRET });
    const result = await authenticatorFor(secrets).authenticate(
      request({ authorization: `Bearer ${token}` }),
      'subscriber',
    );
    assert.equal(result.source, 'header');
    assert.equal(result.expiresAt, (NOW_S + 3600) * 1000);
    assert.equal(result.subject, 'https://example.com/users/42');
    assert.equal(result.claims?.subscribe[0]?.selector.matches('https://example.com/users/42/books'), true);
    assert.deepEqual(result.claims?.payload, { user: 42 });
  });

  it('keeps publisher and subscriber keys apart', async () => {
    const subscriberToken = await sign(seedSubscriberClaims, { alg: 'HS256', key: SUBSCRIBER_SECRET });
    await rejectsWith(
      authenticatorFor(secrets).authenticate(
        request({ authorization: `Bearer ${subscriberToken}` }),
        'publisher',
      ),
      'bad_signature',
      401,
    );
  });

  it('reads the cookie (configured name) when there is no header or query', async () => {
    const token = await sign({ mercure: { publish: [{ match: '*' }] } }, { alg: 'HS256', key: SECRET });
    const authenticator = authenticatorFor({ ...secrets, MERCURE_COOKIE_NAME: 'hubToken' });
    const result = await authenticator.authenticate(request({ cookie: `hubToken=${token}` }), 'publisher');
    assert.equal(result.source, 'cookie');
    assert.equal(result.claims?.publish[0]?.selector.isWildcard, true);
  });

  it('only the winning source is evaluated: an invalid cookie next to a valid header passes', async () => {
    const token = await sign(seedSubscriberClaims, { alg: 'HS256', key: SUBSCRIBER_SECRET });
    const result = await authenticatorFor(secrets).authenticate(
      request({ authorization: `Bearer ${token}`, cookie: 'mercureAuthorization=not-a-jwt' }),
      'subscriber',
    );
    assert.equal(result.source, 'header');
  });

  it('an invalid token is an error even where anonymous would be fine (no silent downgrade)', async () => {
    await rejectsWith(
      authenticatorFor(secrets).authenticate(
        request({ cookie: 'mercureAuthorization=not-a-jwt' }),
        'subscriber',
      ),
      'malformed_token',
      401,
    );
  });
});

describe('HTTPS rule', () => {
  // [name, transport, headers, expected reason or undefined]
  // biome-ignore format: a table, one case per line
  const cases: readonly (readonly [string, TransportFacts, Record<string, string>, AuthFailureReason | undefined])[] = [
    ['token over plain HTTP: refused before it is read', PLAIN, { authorization: 'Bearer not.even.a-jwt' }, 'insecure_transport'],
    ['malformed header over plain HTTP: still the transport error', PLAIN, { authorization: 'Basic abc' }, 'insecure_transport'],
    ['cookie over plain HTTP', PLAIN, { cookie: 'mercureAuthorization=x' }, 'insecure_transport'],
    ['no token over plain HTTP: anonymous is fine', PLAIN, {}, undefined],
    ['loopback in dev mode counts as secure', { ...PLAIN, remoteIsLoopback: true, devMode: true }, { authorization: 'Bearer x.y.z' }, 'malformed_token'],
    ['trusted proxy with https', { ...PLAIN, fromTrustedProxy: true, forwardedProto: 'https' }, { authorization: 'Bearer x.y.z' }, 'malformed_token'],
  ];
  for (const [name, transport, headers, reason] of cases) {
    it(`${name} → ${reason ?? 'anonymous'}`, async () => {
      const failures: AuthFailureReason[] = [];
      const logger = recordingLogger();
      const authenticator = authenticatorFor(secrets, { onFailure: (r) => failures.push(r), logger });
      const pending = authenticator.authenticate(request(headers, { transport }), 'subscriber');
      if (!reason) {
        assert.deepEqual(await pending, {});
        assert.deepEqual(failures, []);
        return;
      }
      const error = await rejectsWith(pending, reason);
      if (reason === 'insecure_transport') {
        assert.equal(error.status, 400);
        assert.match(error.message, /HTTPS/);
      }
      assert.deepEqual(failures, [reason]);
      // The log line names the reason, never the token.
      const refused = logger.entries.find((entry) => entry.message === 'Mercure token refused');
      assert.equal(refused?.fields.reason, reason);
      assert.ok(!JSON.stringify(logger.entries).includes('x.y.z'));
    });
  }
});

describe('claim grammars through the authenticator', () => {
  const legacyClaims = { mercure: { subscribe: ['https://example.com/books/{id}'] } };

  it('bare-string claims → 401', async () => {
    const token = await sign(legacyClaims, { alg: 'HS256', key: SUBSCRIBER_SECRET });
    const failures: AuthFailureReason[] = [];
    await rejectsWith(
      authenticatorFor(secrets, { onFailure: (r) => failures.push(r) }).authenticate(
        request({ authorization: `Bearer ${token}` }),
        'subscriber',
      ),
      'invalid_claims',
      401,
    );
    assert.deepEqual(failures, ['invalid_claims']);
  });

  it('bare-string claims are accepted in legacy mode', async () => {
    const token = await sign(legacyClaims, { alg: 'HS256', key: SUBSCRIBER_SECRET });
    const result = await authenticatorFor({ ...secrets, MERCURE_LEGACY_CLAIMS: 'true' }).authenticate(
      request({ authorization: `Bearer ${token}` }),
      'subscriber',
    );
    assert.equal(result.claims?.subscribe[0]?.selector.matches('https://example.com/books/1'), true);
  });

  it('an unsupported matchType in a token → 401 invalid_claims (the 501 is for the query parameter)', async () => {
    const token = await sign(
      { mercure: { publish: [{ match: 'x', matchType: 'CEL' }] } },
      { alg: 'HS256', key: SECRET },
    );
    await rejectsWith(
      authenticatorFor(secrets).authenticate(request({ authorization: `Bearer ${token}` }), 'publisher'),
      'invalid_claims',
      401,
    );
  });
});

describe('asymmetric keys and JWKS', () => {
  let server: TestServer;
  before(async () => {
    server = await startServer();
  });
  after(async () => {
    await server.close();
  });

  it('verifies RS256, ES256 and EdDSA tokens against PEM keys', async () => {
    const { rsa, ecP256, ed25519 } = keys();
    const table = [
      ['RS256', rsa],
      ['ES256', ecP256],
      ['EdDSA', ed25519],
    ] as const;
    for (const [alg, pair] of table) {
      const authenticator = authenticatorFor({
        MERCURE_PUBLISHER_JWT_KEY: pair.publicPem,
        MERCURE_PUBLISHER_JWT_ALG: alg,
      });
      const token = await sign({ mercure: { publish: [{ match: '*' }] } }, { alg, key: pair.privateKey });
      const result = await authenticator.authenticate(
        request({ authorization: `Bearer ${token}` }),
        'publisher',
      );
      assert.equal(result.claims?.publish.length, 1, alg);
    }
  });

  it('a Mercure 1.0 access token from a JWKS, with iss/aud checks; one fetch for both roles', async () => {
    const { rsa, ecP256 } = keys();
    server.serveJson({
      keys: [jwkOf(ecP256.publicKey, { kid: 'ec-1' }), jwkOf(rsa.publicKey, { kid: 'rsa-1' })],
    });
    const before = server.requests();
    const clock = fakeClock();
    const authenticator = authenticatorFor(
      {
        MERCURE_PUBLISHER_JWKS_URL: server.url,
        MERCURE_SUBSCRIBER_JWKS_URL: server.url,
        MERCURE_JWT_ISSUERS: 'https://idp.example',
        MERCURE_JWT_AUDIENCE: 'https://example.com/.well-known/mercure',
      },
      { now: clock.now },
    );
    await authenticator.ready();
    assert.equal(server.requests(), before + 1);
    const claims = {
      iss: 'https://idp.example',
      aud: 'https://example.com/.well-known/mercure',
      authorization_details: [
        {
          type: 'https://mercure.rocks/authorization-detail',
          actions: ['subscribe'],
          topics: [{ match: '/books/:id', match_type: 'urlpattern' }],
          payload: { user: 7 },
        },
      ],
    };
    const token = await sign(claims, { alg: 'ES256', key: ecP256.privateKey, kid: 'ec-1', typ: 'at+jwt' });
    const result = await authenticator.authenticate(
      request({ authorization: `Bearer ${token}` }),
      'subscriber',
    );
    assert.equal(result.claims?.grammar, 'authorization_details');
    assert.equal(result.claims?.subscribe[0]?.selector.matches('https://example.com/books/3'), true);

    const wrongAudience = await sign(
      { ...claims, aud: 'https://other-hub.example' },
      {
        alg: 'RS256',
        key: rsa.privateKey,
        kid: 'rsa-1',
        typ: 'at+jwt',
      },
    );
    await rejectsWith(
      authenticator.authenticate(request({ authorization: `Bearer ${wrongAudience}` }), 'subscriber'),
      'audience',
    );

    const unknownKid = await sign(claims, {
      alg: 'RS256',
      key: rsa.privateKey,
      kid: 'rotated-away',
      typ: 'at+jwt',
    });
    await rejectsWith(
      authenticator.authenticate(request({ authorization: `Bearer ${unknownKid}` }), 'publisher'),
      'unknown_kid',
      401,
    );
    authenticator.close();
  });
});

describe('configuration errors at construction', () => {
  // [name, environment, variable]
  // biome-ignore format: a table, one case per line
  const cases: readonly (readonly [string, Record<string, string>, string])[] = [
    ['no publisher key at all', { MERCURE_SUBSCRIBER_JWT_KEY: SECRET }, 'MERCURE_PUBLISHER_JWT_KEY'],
    [
      'a PEM that does not parse',
      { MERCURE_PUBLISHER_JWT_KEY: '-----BEGIN PUBLIC KEY-----\nAAAA\n-----END PUBLIC KEY-----', MERCURE_PUBLISHER_JWT_ALG: 'RS256' },
      'MERCURE_PUBLISHER_JWT_KEY',
    ],
    ['a public key with HS256 (confusion)', { MERCURE_PUBLISHER_JWT_KEY: keys().rsa.publicPem }, 'MERCURE_PUBLISHER_JWT_ALG'],
  ];
  for (const [name, environment, variable] of cases) {
    it(`${name} → ConfigError naming ${variable}`, () => {
      assert.throws(
        () => authenticatorFor(environment),
        (error: unknown) => error instanceof ConfigError && error.variable === variable,
      );
    });
  }

  it('without a subscriber key, boot warns and subscriber tokens are refused with 401 (not a 5xx)', async () => {
    const logger = recordingLogger();
    const authenticator = authenticatorFor({ MERCURE_PUBLISHER_JWT_KEY: SECRET }, { logger });
    assert.ok(logger.messages('warn').some((message) => message.startsWith('no subscriber key configured')));
    const token = await sign(seedSubscriberClaims, { alg: 'HS256', key: SECRET });
    await rejectsWith(
      authenticator.authenticate(request({ authorization: `Bearer ${token}` }), 'subscriber'),
      'key_not_configured',
      401,
    );
  });
});

import assert from 'node:assert/strict';
import { sign as cryptoSign, generateKeyPairSync } from 'node:crypto';
import { describe, it } from 'node:test';
import { CompactSign } from 'jose';
import type { JwsAlgorithm } from '../src/algorithms.js';
import type { AuthFailureReason } from '../src/errors.js';
import { importPublicKeyPem, importSecret, type VerificationKey } from '../src/keys.js';
import { createTokenVerifier, type TokenVerifierOptions } from '../src/verify.js';
import {
  fakeClock,
  keys,
  NOW_MS,
  NOW_S,
  recordingLogger,
  rejectsWith,
  SECRET,
  sign,
  tokenWithHeader,
  unsignedToken,
} from './support.js';

function verifierWith(
  key: VerificationKey,
  overrides: Partial<TokenVerifierOptions> = {},
): { verify: (token: string) => Promise<unknown>; lookups: () => number } {
  let lookups = 0;
  const verifier = createTokenVerifier({
    algorithms: ['HS256'],
    resolveKey: () => {
      lookups += 1;
      return key;
    },
    now: () => NOW_MS,
    ...overrides,
  });
  return { verify: (token) => verifier.verify(token), lookups: () => lookups };
}

describe('algorithm checks happen before any key is used', () => {
  // [name, token, allow-list, expected reason]
  // biome-ignore format: a table, one case per line
  const cases: readonly (readonly [string, () => string, readonly JwsAlgorithm[], AuthFailureReason])[] = [
    ['alg none', () => unsignedToken({ sub: 'x' }), ['HS256'], 'alg_none'],
    ['alg None', () => unsignedToken({ sub: 'x' }, 'None'), ['HS256'], 'alg_none'],
    ['alg NONE', () => unsignedToken({ sub: 'x' }, 'NONE'), ['HS256', 'RS256'], 'alg_none'],
    ['alg outside the allow-list', () => tokenWithHeader({ alg: 'HS512' }), ['HS256'], 'alg_not_allowed'],
    ['alg we do not implement', () => tokenWithHeader({ alg: 'PS256' }), ['HS256'], 'alg_not_allowed'],
    ['no alg at all', () => tokenWithHeader({ typ: 'JWT' }), ['HS256'], 'alg_not_allowed'],
    ['alg that is not a string', () => tokenWithHeader({ alg: 256 }), ['HS256'], 'alg_not_allowed'],
    ['kid that is not a string', () => tokenWithHeader({ alg: 'HS256', kid: 7 }), ['HS256'], 'malformed_token'],
    ['header that is not JSON', () => `${Buffer.from('nope').toString('base64url')}.e30.c2ln`, ['HS256'], 'malformed_token'],
    ['two segments', () => 'eyJhbGciOiJIUzI1NiJ9.e30', ['HS256'], 'malformed_token'],
    ['not base64url', () => 'a+b.c/d.e=f', ['HS256'], 'malformed_token'],
    ['empty token', () => '', ['HS256'], 'malformed_token'],
    ['oversized token', () => `${'a'.repeat(70_000)}.b.c`, ['HS256'], 'malformed_token'],
  ];
  for (const [name, token, algorithms, reason] of cases) {
    it(`${name} → ${reason}, no key lookup`, async () => {
      const subject = verifierWith(importSecret(SECRET), { algorithms });
      await rejectsWith(subject.verify(token()), reason, 401);
      assert.equal(subject.lookups(), 0);
    });
  }
});

describe('algorithm confusion', () => {
  it('an HS256 token signed with the RSA public key PEM as secret is refused when the server holds that RSA key', async () => {
    const { rsa } = keys();
    const forged = await sign({ sub: 'attacker' }, { alg: 'HS256', key: rsa.publicPem });
    const rsaKey = importPublicKeyPem(rsa.publicPem);
    // Even an allow-list that (wrongly) admits HS256 next to the RSA key cannot be confused:
    // the key family check refuses before the key is used.
    await rejectsWith(
      verifierWith(rsaKey, { algorithms: ['RS256', 'HS256'] }).verify(forged),
      'alg_key_mismatch',
      401,
    );
    // With the allow-list the configuration should have, it never gets that far.
    await rejectsWith(verifierWith(rsaKey, { algorithms: ['RS256'] }).verify(forged), 'alg_not_allowed', 401);
  });

  // [name, token alg, key, expected]
  // biome-ignore format: a table, one case per line
  const mismatches: readonly (readonly [string, JwsAlgorithm, () => VerificationKey])[] = [
    ['RS256 token against an EC key', 'RS256', () => importPublicKeyPem(keys().ecP256.publicPem)],
    ['ES256 token against a P-384 key', 'ES256', () => importPublicKeyPem(keys().ecP384.publicPem)],
    ['EdDSA token against an RSA key', 'EdDSA', () => importPublicKeyPem(keys().rsa.publicPem)],
    ['HS256 token against an Ed25519 key', 'HS256', () => importPublicKeyPem(keys().ed25519.publicPem)],
    ['RS256 token against a secret', 'RS256', () => importSecret(SECRET)],
    ['RS256 token against a JWK declaring alg RS512', 'RS256', () => ({ ...importPublicKeyPem(keys().rsa.publicPem), alg: 'RS512' })],
  ];
  for (const [name, alg, key] of mismatches) {
    it(`${name} → alg_key_mismatch`, async () => {
      const token = tokenWithHeader({ alg }, { sub: 'x' });
      await rejectsWith(verifierWith(key(), { algorithms: [alg] }).verify(token), 'alg_key_mismatch', 401);
    });
  }
});

describe('signatures', () => {
  it('accepts each supported family with its key', async () => {
    const { rsa, ecP256, ecP384, ed25519 } = keys();
    // biome-ignore format: a table, one case per line
    const table: readonly (readonly [JwsAlgorithm, Parameters<typeof sign>[1]['key'], VerificationKey])[] = [
      ['HS256', SECRET, importSecret(SECRET)],
      ['HS384', SECRET, importSecret(SECRET)],
      ['HS512', SECRET, importSecret(SECRET)],
      ['RS256', rsa.privateKey, importPublicKeyPem(rsa.publicPem)],
      ['RS384', rsa.privateKey, importPublicKeyPem(rsa.publicPem)],
      ['RS512', rsa.privateKey, importPublicKeyPem(rsa.publicPem)],
      ['ES256', ecP256.privateKey, importPublicKeyPem(ecP256.publicPem)],
      ['ES384', ecP384.privateKey, importPublicKeyPem(ecP384.publicPem)],
      ['EdDSA', ed25519.privateKey, importPublicKeyPem(ed25519.publicPem)],
    ];
    for (const [alg, signingKey, verificationKey] of table) {
      const token = await sign({ sub: alg }, { alg, key: signingKey });
      const verified = await createTokenVerifier({
        algorithms: [alg],
        resolveKey: () => verificationKey,
        now: () => NOW_MS,
      }).verify(token);
      assert.equal(verified.payload.sub, alg);
      assert.equal(verified.algorithm, alg);
    }
  });

  it('a token signed by another key → bad_signature', async () => {
    const { rsa, rsa2 } = keys();
    const token = await sign({ sub: 'x' }, { alg: 'RS256', key: rsa2.privateKey });
    await rejectsWith(
      verifierWith(importPublicKeyPem(rsa.publicPem), { algorithms: ['RS256'] }).verify(token),
      'bad_signature',
      401,
    );
  });

  it('a tampered payload → bad_signature', async () => {
    const token = await sign({ role: 'read-only' }, { alg: 'HS256', key: SECRET });
    const [header, , signature] = token.split('.');
    const forgedPayload = Buffer.from(JSON.stringify({ role: 'admin', exp: NOW_S + 60 })).toString(
      'base64url',
    );
    await rejectsWith(
      verifierWith(importSecret(SECRET)).verify(`${header}.${forgedPayload}.${signature}`),
      'bad_signature',
    );
  });

  it('a payload that is not a JSON object → malformed_token', async () => {
    const token = await new CompactSign(new TextEncoder().encode('[1,2,3]'))
      .setProtectedHeader({ alg: 'HS256' })
      .sign(new TextEncoder().encode(SECRET));
    await rejectsWith(verifierWith(importSecret(SECRET)).verify(token), 'malformed_token');
  });

  it('a server key jose will not use (1024-bit RSA) → invalid_key 500, nothing echoed', async () => {
    const weak = generateKeyPairSync('rsa', { modulusLength: 1024 });
    const input = `${Buffer.from(JSON.stringify({ alg: 'RS256' })).toString('base64url')}.${Buffer.from('{}').toString('base64url')}`;
    const signature = cryptoSign('sha256', Buffer.from(input), weak.privateKey).toString('base64url');
    // importPublicKeyPem refuses such a key; a caller-built key still reaches jose.
    const error = await rejectsWith(
      verifierWith({ key: weak.publicKey, family: 'rsa' }, { algorithms: ['RS256'] }).verify(
        `${input}.${signature}`,
      ),
      'invalid_key',
      500,
    );
    assert.ok(!error.message.includes('BEGIN') && !error.message.includes('2048'));
  });
});

describe('temporal claims with a 30 s skew', () => {
  // [name, claims, now (ms), expected reason or undefined for accepted]
  // biome-ignore format: a table, one case per line
  const cases: readonly (readonly [string, Record<string, unknown>, number, AuthFailureReason | undefined])[] = [
    ['exp now', { exp: NOW_S }, NOW_MS, undefined],
    ['exp exactly skew ago', { exp: NOW_S - 30 }, NOW_MS, undefined],
    ['exp skew ago, 999 ms into the second', { exp: NOW_S - 30 }, NOW_MS + 999, undefined],
    ['exp skew + 1 s ago', { exp: NOW_S - 31 }, NOW_MS, 'expired'],
    ['exp skew ago, one second later', { exp: NOW_S - 30 }, NOW_MS + 1000, 'expired'],
    ['nbf exactly skew ahead', { nbf: NOW_S + 30 }, NOW_MS, undefined],
    ['nbf skew + 1 s ahead', { nbf: NOW_S + 31 }, NOW_MS, 'not_yet_valid'],
    ['iat exactly skew ahead', { iat: NOW_S + 30 }, NOW_MS, undefined],
    ['iat skew + 1 s ahead', { iat: NOW_S + 31 }, NOW_MS, 'issued_in_future'],
    ['exp as a string is not "no exp"', { exp: String(NOW_S + 60) }, NOW_MS, 'invalid_claims'],
    ['nbf as null', { nbf: null }, NOW_MS, 'invalid_claims'],
  ];
  for (const [name, claims, now, reason] of cases) {
    it(`${name} → ${reason ?? 'accepted'}`, async () => {
      const token = await sign(claims, { alg: 'HS256', key: SECRET, exp: null });
      const subject = verifierWith(importSecret(SECRET), {
        clockSkewMs: 30_000,
        now: () => now,
        cache: false,
      });
      if (reason) await rejectsWith(subject.verify(token), reason, 401);
      else await subject.verify(token);
    });
  }

  it('without skew, exp one second ago is expired', async () => {
    const token = await sign({ exp: NOW_S - 1 }, { alg: 'HS256', key: SECRET, exp: null });
    await rejectsWith(verifierWith(importSecret(SECRET)).verify(token), 'expired');
  });

  it('a token without exp is accepted and logged at debug level', async () => {
    const logger = recordingLogger();
    const token = await sign({ sub: 'forever' }, { alg: 'HS256', key: SECRET, exp: null });
    const verified = await createTokenVerifier({
      algorithms: ['HS256'],
      resolveKey: () => importSecret(SECRET),
      now: () => NOW_MS,
      logger,
    }).verify(token);
    assert.equal(verified.expiresAt, undefined);
    assert.deepEqual(logger.messages('debug'), ['accepted a token without exp']);
  });
});

describe('issuer and audience, when configured', () => {
  // [name, claims, issuers, audiences, expected reason or undefined]
  // biome-ignore format: a table, one case per line
  const cases: readonly (readonly [
    string,
    Record<string, unknown>,
    readonly string[] | undefined,
    readonly string[] | undefined,
    AuthFailureReason | undefined,
  ])[] = [
    ['not configured: anything goes', { iss: 'x', aud: 'y' }, undefined, undefined, undefined],
    ['trusted issuer', { iss: 'https://idp.example' }, ['https://idp.example'], undefined, undefined],
    ['second trusted issuer', { iss: 'https://b.example' }, ['https://a.example', 'https://b.example'], undefined, undefined],
    ['wrong issuer', { iss: 'https://evil.example' }, ['https://idp.example'], undefined, 'issuer'],
    ['missing issuer', {}, ['https://idp.example'], undefined, 'issuer'],
    ['audience string', { aud: 'https://hub.example' }, undefined, ['https://hub.example'], undefined],
    ['audience in an array', { aud: ['x', 'https://hub.example'] }, undefined, ['https://hub.example'], undefined],
    ['wrong audience', { aud: 'https://other.example' }, undefined, ['https://hub.example'], 'audience'],
    ['missing audience', {}, undefined, ['https://hub.example'], 'audience'],
    ['audience of the wrong type', { aud: [42] }, undefined, ['42'], 'audience'],
  ];
  for (const [name, claims, issuers, audiences, reason] of cases) {
    it(`${name} → ${reason ?? 'accepted'}`, async () => {
      const token = await sign(claims, { alg: 'HS256', key: SECRET });
      const subject = verifierWith(importSecret(SECRET), { issuers, audiences });
      if (reason) await rejectsWith(subject.verify(token), reason, 401);
      else await subject.verify(token);
    });
  }
});

describe('verified-token cache', () => {
  it('a second presentation skips the key lookup and signature', async () => {
    const token = await sign({ sub: 'x' }, { alg: 'HS256', key: SECRET });
    const subject = verifierWith(importSecret(SECRET));
    await subject.verify(token);
    await subject.verify(token);
    assert.equal(subject.lookups(), 1);
  });

  it('without a cache every presentation is verified', async () => {
    const token = await sign({ sub: 'x' }, { alg: 'HS256', key: SECRET });
    const subject = verifierWith(importSecret(SECRET), { cache: false });
    await subject.verify(token);
    await subject.verify(token);
    assert.equal(subject.lookups(), 2);
  });

  it('a cached token still expires', async () => {
    const clock = fakeClock();
    const token = await sign({ exp: NOW_S + 10 }, { alg: 'HS256', key: SECRET, exp: null });
    const subject = verifierWith(importSecret(SECRET), { now: clock.now });
    await subject.verify(token);
    clock.advance(11_000);
    await rejectsWith(subject.verify(token), 'expired');
    assert.equal(subject.lookups(), 1);
  });

  it('a cached entry is re-verified after the cache TTL', async () => {
    const clock = fakeClock();
    const token = await sign({ sub: 'x' }, { alg: 'HS256', key: SECRET, exp: null });
    const subject = verifierWith(importSecret(SECRET), { now: clock.now, cache: { maxTtlMs: 60_000 } });
    await subject.verify(token);
    clock.advance(59_999);
    await subject.verify(token);
    assert.equal(subject.lookups(), 1);
    clock.advance(1);
    await subject.verify(token);
    assert.equal(subject.lookups(), 2);
  });

  it('a failed verification is not cached', async () => {
    const { rsa, rsa2 } = keys();
    const token = await sign({ sub: 'x' }, { alg: 'RS256', key: rsa2.privateKey });
    const subject = verifierWith(importPublicKeyPem(rsa.publicPem), { algorithms: ['RS256'] });
    await rejectsWith(subject.verify(token), 'bad_signature');
    await rejectsWith(subject.verify(token), 'bad_signature');
    assert.equal(subject.lookups(), 2);
  });
});

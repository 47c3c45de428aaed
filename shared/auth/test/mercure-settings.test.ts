import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { ConfigError, parseEnv } from '@herald/config';
import { ASYMMETRIC_ALGORITHMS } from '../src/algorithms.js';
import {
  type MercureAuthConfig,
  mercureAuthSettings,
  resolveMercureRoleKeys,
} from '../src/mercure-settings.js';
import { keys, SECRET } from './support.js';

function config(environment: Record<string, string>): MercureAuthConfig {
  return parseEnv(mercureAuthSettings, environment);
}

describe('mercureAuthSettings', () => {
  it('defaults', () => {
    const parsed = config({});
    assert.equal(parsed.MERCURE_COOKIE_NAME, 'mercureAuthorization');
    assert.equal(parsed.MERCURE_LEGACY_CLAIMS, false);
    assert.equal(parsed.MERCURE_PUBLISHER_JWT_ALG, undefined);
    assert.equal(parsed.MERCURE_JWT_ISSUERS, undefined);
  });

  it('reads every variable', () => {
    const parsed = config({
      MERCURE_PUBLISHER_JWT_KEY: SECRET,
      MERCURE_PUBLISHER_JWT_ALG: 'hs512',
      MERCURE_SUBSCRIBER_JWKS_URL: 'https://idp.example/jwks.json',
      MERCURE_LEGACY_CLAIMS: 'true',
      MERCURE_COOKIE_NAME: 'hubToken',
      MERCURE_JWT_ISSUERS: 'https://a.example, https://b.example',
      MERCURE_JWT_AUDIENCE: 'https://hub.example',
    });
    assert.equal(parsed.MERCURE_PUBLISHER_JWT_ALG, 'HS512');
    assert.equal(parsed.MERCURE_SUBSCRIBER_JWKS_URL?.href, 'https://idp.example/jwks.json');
    assert.equal(parsed.MERCURE_LEGACY_CLAIMS, true);
    assert.equal(parsed.MERCURE_COOKIE_NAME, 'hubToken');
    assert.deepEqual(parsed.MERCURE_JWT_ISSUERS, ['https://a.example', 'https://b.example']);
    assert.equal(parsed.MERCURE_JWT_AUDIENCE, 'https://hub.example');
  });

  // [variable, bad value]
  // biome-ignore format: a table, one case per line
  const malformed: readonly (readonly [string, string])[] = [
    ['MERCURE_PUBLISHER_JWT_ALG', 'none'],
    ['MERCURE_SUBSCRIBER_JWT_ALG', 'PS256'],
    ['MERCURE_PUBLISHER_JWKS_URL', 'ftp://idp.example/jwks'],
    ['MERCURE_LEGACY_CLAIMS', 'maybe'],
  ];
  for (const [variable, value] of malformed) {
    it(`${variable}=${value} stops the boot, naming the variable`, () => {
      assert.throws(
        () => config({ [variable]: value }),
        (error: unknown) => error instanceof ConfigError && error.variable === variable,
      );
    });
  }
});

describe('role key resolution', () => {
  const { rsa, ecP256 } = keys();
  // [name, environment, role, expected algorithms, key family or 'jwks']
  // biome-ignore format: a table, one case per line
  const accepted: readonly (readonly [string, Record<string, string>, 'publisher' | 'subscriber', readonly string[], string])[] = [
    ['secret with the default alg', { MERCURE_PUBLISHER_JWT_KEY: SECRET }, 'publisher', ['HS256'], 'hmac'],
    ['secret with HS384', { MERCURE_PUBLISHER_JWT_KEY: SECRET, MERCURE_PUBLISHER_JWT_ALG: 'HS384' }, 'publisher', ['HS384'], 'hmac'],
    ['RSA PEM with RS256', { MERCURE_SUBSCRIBER_JWT_KEY: rsa.publicPem, MERCURE_SUBSCRIBER_JWT_ALG: 'RS256' }, 'subscriber', ['RS256'], 'rsa'],
    ['EC PEM with ES256', { MERCURE_PUBLISHER_JWT_KEY: ecP256.publicPem, MERCURE_PUBLISHER_JWT_ALG: 'ES256' }, 'publisher', ['ES256'], 'ec-p256'],
    ['JWKS alone: every asymmetric alg', { MERCURE_PUBLISHER_JWKS_URL: 'https://idp.example/jwks' }, 'publisher', [...ASYMMETRIC_ALGORITHMS], 'jwks'],
    [
      'JWKS with a pinned alg',
      { MERCURE_PUBLISHER_JWKS_URL: 'https://idp.example/jwks', MERCURE_PUBLISHER_JWT_ALG: 'EdDSA' },
      'publisher',
      ['EdDSA'],
      'jwks',
    ],
    [
      'a static key wins over JWKS',
      { MERCURE_PUBLISHER_JWT_KEY: rsa.publicPem, MERCURE_PUBLISHER_JWT_ALG: 'RS512', MERCURE_PUBLISHER_JWKS_URL: 'https://idp.example/jwks' },
      'publisher',
      ['RS512'],
      'rsa',
    ],
  ];
  for (const [name, environment, role, algorithms, source] of accepted) {
    it(name, () => {
      const resolved = resolveMercureRoleKeys(config(environment), role);
      assert.deepEqual(resolved?.algorithms, algorithms);
      assert.equal(resolved?.staticKey?.family ?? (resolved?.jwksUrl ? 'jwks' : undefined), source);
    });
  }

  it('a role with nothing configured is undefined', () => {
    assert.equal(
      resolveMercureRoleKeys(config({ MERCURE_PUBLISHER_JWT_KEY: SECRET }), 'subscriber'),
      undefined,
    );
  });

  it('notes an ignored JWKS URL and a short secret', () => {
    const resolved = resolveMercureRoleKeys(
      config({ MERCURE_PUBLISHER_JWT_KEY: 'short', MERCURE_PUBLISHER_JWKS_URL: 'https://idp.example/jwks' }),
      'publisher',
    );
    assert.equal(resolved?.notes.length, 2);
  });

  // [name, environment, role, variable named]
  // biome-ignore format: a table, one case per line
  const refused: readonly (readonly [string, Record<string, string>, 'publisher' | 'subscriber', string])[] = [
    ['PEM with the default HS256 (algorithm confusion)', { MERCURE_PUBLISHER_JWT_KEY: rsa.publicPem }, 'publisher', 'MERCURE_PUBLISHER_JWT_ALG'],
    ['PEM with HS256 explicitly', { MERCURE_SUBSCRIBER_JWT_KEY: rsa.publicPem, MERCURE_SUBSCRIBER_JWT_ALG: 'HS256' }, 'subscriber', 'MERCURE_SUBSCRIBER_JWT_ALG'],
    ['secret with RS256', { MERCURE_PUBLISHER_JWT_KEY: SECRET, MERCURE_PUBLISHER_JWT_ALG: 'RS256' }, 'publisher', 'MERCURE_PUBLISHER_JWT_ALG'],
    ['RSA PEM with ES256', { MERCURE_PUBLISHER_JWT_KEY: rsa.publicPem, MERCURE_PUBLISHER_JWT_ALG: 'ES256' }, 'publisher', 'MERCURE_PUBLISHER_JWT_ALG'],
    ['P-256 PEM with ES384', { MERCURE_PUBLISHER_JWT_KEY: ecP256.publicPem, MERCURE_PUBLISHER_JWT_ALG: 'ES384' }, 'publisher', 'MERCURE_PUBLISHER_JWT_ALG'],
    [
      'a PEM that does not parse',
      { MERCURE_PUBLISHER_JWT_KEY: '-----BEGIN PUBLIC KEY-----\nZ2FyYmFnZQ==\n-----END PUBLIC KEY-----', MERCURE_PUBLISHER_JWT_ALG: 'RS256' },
      'publisher',
      'MERCURE_PUBLISHER_JWT_KEY',
    ],
    [
      'a private key PEM',
      { MERCURE_PUBLISHER_JWT_KEY: rsa.privateKey.export({ type: 'pkcs8', format: 'pem' }).toString(), MERCURE_PUBLISHER_JWT_ALG: 'RS256' },
      'publisher',
      'MERCURE_PUBLISHER_JWT_KEY',
    ],
    ['JWKS with an HMAC alg', { MERCURE_PUBLISHER_JWKS_URL: 'https://idp.example/jwks', MERCURE_PUBLISHER_JWT_ALG: 'HS256' }, 'publisher', 'MERCURE_PUBLISHER_JWT_ALG'],
    ['an alg with no key', { MERCURE_SUBSCRIBER_JWT_ALG: 'RS256' }, 'subscriber', 'MERCURE_SUBSCRIBER_JWT_KEY'],
  ];
  for (const [name, environment, role, variable] of refused) {
    it(`${name} → ConfigError naming ${variable}`, () => {
      const keyText = environment.MERCURE_PUBLISHER_JWT_KEY ?? environment.MERCURE_SUBSCRIBER_JWT_KEY ?? '';
      assert.throws(
        () => resolveMercureRoleKeys(config(environment), role),
        (error: unknown) =>
          error instanceof ConfigError &&
          error.variable === variable &&
          // Key material is never echoed, not even a piece of it.
          !(keyText.length > 80 && error.message.includes(keyText.slice(40, 80))),
      );
    });
  }
});

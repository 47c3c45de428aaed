import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { ConfigError, parseEnv } from '@herald/config';
import {
  type BrokerAuthConfig,
  brokerAuthSettings,
  validateBrokerAuthConfig,
} from '../src/broker-settings.js';
import { keys, SECRET } from './support.js';

function config(environment: Record<string, string>): BrokerAuthConfig {
  return parseEnv(brokerAuthSettings, environment);
}

describe('brokerAuthSettings', () => {
  it("has Queen's defaults", () => {
    const parsed = config({});
    assert.deepEqual(
      {
        enabled: parsed.JWT_ENABLED,
        algorithm: parsed.JWT_ALGORITHM,
        skewMs: parsed.JWT_CLOCK_SKEW,
        rolesClaim: parsed.JWT_ROLES_CLAIM,
        rolesArrayClaim: parsed.JWT_ROLES_ARRAY_CLAIM,
        roles: [
          parsed.JWT_ROLE_ADMIN,
          parsed.JWT_ROLE_READ_WRITE,
          parsed.JWT_ROLE_READ_ONLY,
          parsed.JWT_ROLE_WRITE_ONLY,
        ],
        skipPaths: parsed.JWT_SKIP_PATHS,
        jwksRefreshMs: parsed.JWT_JWKS_REFRESH_INTERVAL,
        jwksTimeoutMs: parsed.JWT_JWKS_TIMEOUT_MS,
        optional: [
          parsed.JWT_SECRET,
          parsed.JWT_PUBLIC_KEY,
          parsed.JWT_JWKS_URL,
          parsed.JWT_ISSUER,
          parsed.JWT_AUDIENCE,
        ],
      },
      {
        enabled: false,
        algorithm: 'HS256',
        skewMs: 30_000,
        rolesClaim: 'role',
        rolesArrayClaim: 'roles',
        roles: ['admin', 'read-write', 'read-only', 'write-only'],
        skipPaths: ['/health', '/metrics/prometheus', '/metrics', '/'],
        jwksRefreshMs: 3_600_000,
        jwksTimeoutMs: 5000,
        optional: [undefined, undefined, undefined, undefined, undefined],
      },
    );
  });

  // [JWT_CLOCK_SKEW as written, milliseconds]
  // biome-ignore format: a table, one case per line
  const skews: readonly (readonly [string, number])[] = [
    ['30', 30_000], // a bare integer is SECONDS, as Queen reads it
    ['0', 0],
    ['45s', 45_000],
    ['2m', 120_000],
    ['500ms', 500],
  ];
  for (const [written, milliseconds] of skews) {
    it(`JWT_CLOCK_SKEW=${written} is ${milliseconds} ms`, () => {
      assert.equal(config({ JWT_CLOCK_SKEW: written }).JWT_CLOCK_SKEW, milliseconds);
    });
  }

  it('a malformed JWT_CLOCK_SKEW stops the boot and says a bare integer is seconds', () => {
    assert.throws(
      () => config({ JWT_CLOCK_SKEW: 'thirty' }),
      (error: unknown) =>
        error instanceof ConfigError && error.variable === 'JWT_CLOCK_SKEW' && /seconds/.test(error.message),
    );
  });

  it('reads a custom skip list and role mapping', () => {
    const parsed = config({
      JWT_SKIP_PATHS: '/health, /assets/',
      JWT_ROLES_CLAIM: 'scope',
      JWT_ROLE_WRITE_ONLY: 'queen.write',
    });
    assert.deepEqual(parsed.JWT_SKIP_PATHS, ['/health', '/assets/']);
    assert.equal(parsed.JWT_ROLES_CLAIM, 'scope');
    assert.equal(parsed.JWT_ROLE_WRITE_ONLY, 'queen.write');
  });
});

describe('boot-time validation', () => {
  const pem = keys().rsa.publicPem;
  const jwks = 'https://idp.example/.well-known/jwks.json';
  // [name, environment, variable named or undefined when valid, text the message must contain]
  // biome-ignore format: a table, one case per line
  const cases: readonly (readonly [string, Record<string, string>, string | undefined, string | undefined])[] = [
    ['disabled: nothing is checked', { JWT_ALGORITHM: 'ES256' }, undefined, undefined],
    ['HS256 with a secret', { JWT_ENABLED: 'true', JWT_SECRET: SECRET }, undefined, undefined],
    ['HS256 with only a JWKS URL (seed: any of the three)', { JWT_ENABLED: 'true', JWT_JWKS_URL: jwks }, undefined, undefined],
    ['HS384 with a secret', { JWT_ENABLED: 'true', JWT_ALGORITHM: 'HS384', JWT_SECRET: SECRET }, undefined, undefined],
    ['auto with a public key', { JWT_ENABLED: 'true', JWT_ALGORITHM: 'auto', JWT_PUBLIC_KEY: pem }, undefined, undefined],
    ['RS256 with a public key', { JWT_ENABLED: 'true', JWT_ALGORITHM: 'RS256', JWT_PUBLIC_KEY: pem }, undefined, undefined],
    ['RS512 with a JWKS URL', { JWT_ENABLED: 'true', JWT_ALGORITHM: 'RS512', JWT_JWKS_URL: jwks }, undefined, undefined],
    ['EdDSA with a JWKS URL', { JWT_ENABLED: 'true', JWT_ALGORITHM: 'EdDSA', JWT_JWKS_URL: jwks }, undefined, undefined],
    ['HS256 with no key material', { JWT_ENABLED: 'true' }, 'JWT_SECRET', 'no key material'],
    ['auto with no key material', { JWT_ENABLED: 'true', JWT_ALGORITHM: 'auto' }, 'JWT_SECRET', 'JWT_ALGORITHM=auto'],
    ['HS512 with no key material', { JWT_ENABLED: 'true', JWT_ALGORITHM: 'HS512' }, 'JWT_SECRET', 'JWT_SECRET'],
    [
      'RS256 with only a secret',
      { JWT_ENABLED: 'true', JWT_ALGORITHM: 'RS256', JWT_SECRET: SECRET },
      'JWT_PUBLIC_KEY',
      'neither JWT_PUBLIC_KEY nor JWT_JWKS_URL',
    ],
    ['RS384 with nothing', { JWT_ENABLED: 'true', JWT_ALGORITHM: 'RS384' }, 'JWT_PUBLIC_KEY', 'JWT_JWKS_URL'],
    ['EdDSA with nothing', { JWT_ENABLED: 'true', JWT_ALGORITHM: 'EdDSA', JWT_SECRET: SECRET }, 'JWT_PUBLIC_KEY', 'JWT_JWKS_URL'],
    ['an algorithm outside the list', { JWT_ENABLED: 'true', JWT_ALGORITHM: 'ES256', JWT_SECRET: SECRET }, 'JWT_ALGORITHM', 'HS256, HS384, HS512, RS256, RS384, RS512, EdDSA, or auto'],
    ['a wrongly-cased algorithm', { JWT_ENABLED: 'true', JWT_ALGORITHM: 'hs256', JWT_SECRET: SECRET }, 'JWT_ALGORITHM', 'not supported'],
    ['none', { JWT_ENABLED: 'true', JWT_ALGORITHM: 'none', JWT_SECRET: SECRET }, 'JWT_ALGORITHM', 'not supported'],
  ];
  for (const [name, environment, variable, text] of cases) {
    it(`${name} → ${variable ? `ConfigError naming ${variable}` : 'valid'}`, () => {
      const parsed = config(environment);
      if (!variable) {
        validateBrokerAuthConfig(parsed);
        return;
      }
      assert.throws(
        () => validateBrokerAuthConfig(parsed),
        (error: unknown) =>
          error instanceof ConfigError && error.variable === variable && error.message.includes(text ?? ''),
      );
    });
  }
});

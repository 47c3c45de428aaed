/*
 * Both authenticators ask the deny list after verification, on every request: a token verified
 * and cached before its revocation is refused at its next request (issue #24 item 3).
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { parseEnv } from '@herald/config';
import { createBrokerAuthenticator } from '../src/broker-authenticator.js';
import { brokerAuthSettings } from '../src/broker-settings.js';
import { createMercureAuthenticator } from '../src/mercure-authenticator.js';
import { mercureAuthSettings } from '../src/mercure-settings.js';
import { DenyList } from '../src/revocation.js';
import { NOW_MS, NOW_S, rejectsWith, SECRET, sign } from './support.js';

describe('broker authenticator with a deny list', () => {
  it('refuses a revoked token with 401 revoked, also when the token is cached', async () => {
    const denyList = new DenyList(() => NOW_MS);
    const authenticator = createBrokerAuthenticator(
      parseEnv(brokerAuthSettings, { JWT_ENABLED: 'true', JWT_SECRET: SECRET }),
      { now: () => NOW_MS, revocations: denyList },
    );
    const token = await sign(
      { sub: 'alice', jti: 'token-1', iat: NOW_S - 10 },
      { alg: 'HS256', key: SECRET },
    );
    const header = `Bearer ${token}`;
    assert.equal((await authenticator.authenticate(header)).sub, 'alice'); // now cached
    denyList.replace([{ kind: 'jti', jti: 'token-1' }]);
    const error = await rejectsWith(authenticator.authenticate(header), 'revoked', 401);
    assert.equal(error.message, 'Token has been revoked');
    denyList.replace([{ kind: 'sub', sub: 'alice', before: NOW_MS - 60_000 }]);
    assert.equal((await authenticator.authenticate(header)).sub, 'alice'); // issued after the cut-off
    denyList.replace([{ kind: 'sub', sub: 'alice', before: NOW_MS }]);
    await rejectsWith(authenticator.authenticate(header), 'revoked', 401);
    authenticator.close();
  });
});

describe('Mercure authenticator with a deny list', () => {
  it('refuses a revoked token with 401 revoked, counts it, and exposes jti and iat otherwise', async () => {
    const denyList = new DenyList(() => NOW_MS);
    const failures: string[] = [];
    const authenticator = createMercureAuthenticator(
      parseEnv(mercureAuthSettings, {
        MERCURE_PUBLISHER_JWT_KEY: SECRET,
        MERCURE_SUBSCRIBER_JWT_KEY: SECRET,
      }),
      { now: () => NOW_MS, revocations: denyList, onFailure: (reason) => failures.push(reason) },
    );
    const token = await sign(
      { sub: 'alice', jti: 'token-1', iat: NOW_S - 10, mercure: { subscribe: [{ match: '*' }] } },
      { alg: 'HS256', key: SECRET },
    );
    const request = {
      headers: { authorization: `Bearer ${token}` },
      query: new URLSearchParams(),
      transport: { encrypted: true, fromTrustedProxy: false, remoteIsLoopback: false, devMode: false },
    };
    const result = await authenticator.authenticate(request, 'subscriber');
    assert.equal(result.tokenId, 'token-1');
    assert.equal(result.issuedAt, NOW_S - 10);
    assert.equal(result.subject, 'alice');
    denyList.replace([{ kind: 'jti', jti: 'token-1' }]);
    await rejectsWith(authenticator.authenticate(request, 'subscriber'), 'revoked', 401);
    assert.deepEqual(failures, ['revoked']);
    authenticator.close();
  });
});

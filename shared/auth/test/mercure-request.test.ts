import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import Fastify from 'fastify';
import {
  extractMercureToken,
  isLoopbackAddress,
  isSecureTransport,
  type TokenCarrier,
  type TransportFacts,
  tokenSourceOf,
  transportFactsOf,
} from '../src/mercure-request.js';
import { throwsWith } from './support.js';

const bearer = (token: string) => ({ authorization: `Bearer ${token}` });

describe('token source precedence: header, then query, then cookie', () => {
  // [name, carrier, cookie name, expected [source, token] or undefined]
  // biome-ignore format: a table, one case per line
  const cases: readonly (readonly [string, TokenCarrier, string | undefined, readonly [string, string] | undefined])[] = [
    ['header only', { headers: bearer('H') }, undefined, ['header', 'H']],
    [
      'header beats query and cookie',
      { headers: bearer('H'), query: { authorization: 'Q' }, cookies: { mercureAuthorization: 'C' } },
      undefined,
      ['header', 'H'],
    ],
    ['query beats cookie', { headers: {}, query: { authorization: 'Q' }, cookies: { mercureAuthorization: 'C' } }, undefined, ['query', 'Q']],
    ['cookie alone', { headers: {}, cookies: { mercureAuthorization: 'C' } }, undefined, ['cookie', 'C']],
    ['cookie read from the Cookie header', { headers: { cookie: 'a=1; mercureAuthorization=C%2B; b=2' } }, undefined, ['cookie', 'C+']],
    ['configured cookie name', { headers: { cookie: 'mercureAuthorization=X; hubToken=C' } }, 'hubToken', ['cookie', 'C']],
    ['RFC 6750 access_token query parameter', { headers: {}, query: { access_token: 'A' } }, undefined, ['query', 'A']],
    ['authorization beats access_token', { headers: {}, query: { access_token: 'A', authorization: 'Q' } }, undefined, ['query', 'Q']],
    ['URLSearchParams query', { headers: {}, query: new URLSearchParams('authorization=Q') }, undefined, ['query', 'Q']],
    ['Bearer scheme is case-insensitive', { headers: { authorization: 'bearer H' } }, undefined, ['header', 'H']],
    ['an empty cookie is no credential', { headers: {}, cookies: { mercureAuthorization: '' } }, undefined, undefined],
    ['nothing: anonymous', { headers: { cookie: 'other=1' }, query: { match: 'x' } }, undefined, undefined],
  ];
  for (const [name, carrier, cookieName, expected] of cases) {
    it(name, () => {
      const found = extractMercureToken(carrier, cookieName);
      assert.deepEqual(found ? [found.source, found.token] : undefined, expected);
      assert.equal(tokenSourceOf(carrier, cookieName), expected?.[0]);
    });
  }

  /** An object that fails the test if anything reads it. */
  const untouchable = new Proxy(
    {},
    {
      get() {
        throw new Error('a losing source was read');
      },
    },
  ) as Record<string, string>;

  it('a winning header means the query and cookies are never read', () => {
    const found = extractMercureToken({ headers: bearer('H'), query: untouchable, cookies: untouchable });
    assert.equal(found?.token, 'H');
  });

  it('a winning query means the cookies are never read', () => {
    const found = extractMercureToken({ headers: {}, query: { authorization: 'Q' }, cookies: untouchable });
    assert.equal(found?.token, 'Q');
  });
});

describe('a present but unusable winning source is an error, not a fall-through', () => {
  // [name, carrier]
  // biome-ignore format: a table, one case per line
  const cases: readonly (readonly [string, TokenCarrier])[] = [
    ['Basic credentials', { headers: { authorization: 'Basic dXNlcjpwYXNz' }, cookies: { mercureAuthorization: 'C' } }],
    ['Bearer without a token', { headers: { authorization: 'Bearer ' } }],
    ['an empty Authorization header', { headers: { authorization: '' } }],
    ['a repeated query parameter', { headers: {}, query: { authorization: ['a', 'b'] } }],
    ['an empty query parameter', { headers: {}, query: { authorization: '' }, cookies: { mercureAuthorization: 'C' } }],
  ];
  for (const [name, carrier] of cases) {
    it(`${name} → 400 malformed_token (RFC 6750 invalid_request)`, () => {
      throwsWith(() => extractMercureToken(carrier), 'malformed_token', 400);
    });
  }
});

describe('HTTPS rule', () => {
  const base: TransportFacts = {
    encrypted: false,
    fromTrustedProxy: false,
    remoteIsLoopback: false,
    devMode: false,
  };
  // [name, facts, secure]
  // biome-ignore format: a table, one case per line
  const cases: readonly (readonly [string, Partial<TransportFacts>, boolean])[] = [
    ['plain HTTP from the network', {}, false],
    ['TLS on our listener', { encrypted: true }, true],
    ['trusted proxy says https', { fromTrustedProxy: true, forwardedProto: 'https' }, true],
    ['trusted proxy says HTTPS (case)', { fromTrustedProxy: true, forwardedProto: ' HTTPS ' }, true],
    ['trusted proxy says http', { fromTrustedProxy: true, forwardedProto: 'http' }, false],
    ['untrusted peer claims https', { fromTrustedProxy: false, forwardedProto: 'https' }, false],
    ['loopback outside dev mode', { remoteIsLoopback: true }, false],
    ['loopback in dev mode', { remoteIsLoopback: true, devMode: true }, true],
    ['dev mode, remote peer', { devMode: true }, false],
  ];
  for (const [name, facts, secure] of cases) {
    it(`${name} → ${secure ? 'secure' : 'insecure'}`, () => {
      assert.equal(isSecureTransport({ ...base, ...facts }), secure);
    });
  }

  // [address, loopback]
  // biome-ignore format: a table, one case per line
  const addresses: readonly (readonly [string | undefined, boolean])[] = [
    ['127.0.0.1', true],
    ['127.8.9.10', true],
    ['::1', true],
    ['::ffff:127.0.0.1', true],
    ['10.0.0.1', false],
    ['::ffff:10.0.0.1', false],
    ['fe80::1', false],
    [undefined, false],
  ];
  for (const [address, loopback] of addresses) {
    it(`${String(address)} is ${loopback ? '' : 'not '}loopback`, () => {
      assert.equal(isLoopbackAddress(address), loopback);
    });
  }
});

describe('transport facts from a fastify request', () => {
  async function factsVia(
    trustProxy: boolean | string,
    headers: Record<string, string>,
    remoteAddress: string,
    devMode = false,
  ): Promise<TransportFacts> {
    const app = Fastify({ trustProxy });
    let facts: TransportFacts | undefined;
    app.get('/', async (request) => {
      facts = transportFactsOf(request, { devMode });
      return 'ok';
    });
    await app.inject({ method: 'GET', url: '/', headers, remoteAddress });
    await app.close();
    assert.ok(facts);
    return facts;
  }

  // [name, trustProxy, headers, peer, dev mode, secure]
  // biome-ignore format: a table, one case per line
  const cases: readonly (readonly [string, boolean | string, Record<string, string>, string, boolean, boolean])[] = [
    ['trusted proxy with X-Forwarded-Proto https', '10.0.0.1', { 'x-forwarded-proto': 'https' }, '10.0.0.1', false, true],
    ['last hop decides', '10.0.0.1', { 'x-forwarded-proto': 'https, http' }, '10.0.0.1', false, false],
    ['peer not in the trusted list', '10.0.0.1', { 'x-forwarded-proto': 'https' }, '10.0.0.2', false, false],
    ['no proxy trusted at all', false, { 'x-forwarded-proto': 'https' }, '10.0.0.1', false, false],
    ['plain HTTP, no header', '10.0.0.1', {}, '10.0.0.1', false, false],
    ['loopback peer in dev mode', false, {}, '127.0.0.1', true, true],
    ['loopback peer outside dev mode', false, {}, '127.0.0.1', false, false],
  ];
  for (const [name, trustProxy, headers, peer, devMode, secure] of cases) {
    it(`${name} → ${secure ? 'secure' : 'insecure'}`, async () => {
      assert.equal(isSecureTransport(await factsVia(trustProxy, headers, peer, devMode)), secure);
    });
  }

  it('TLS on the socket', () => {
    const facts = transportFactsOf(
      { protocol: 'https', headers: {}, socket: { encrypted: true, remoteAddress: '203.0.113.9' } },
      { devMode: false },
    );
    assert.equal(isSecureTransport(facts), true);
  });
});

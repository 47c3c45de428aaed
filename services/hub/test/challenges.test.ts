import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import {
  PUBLISHER_SECRET,
  publisherToken,
  SECURE,
  SUBSCRIBER_SECRET,
  signToken,
  startTestHub,
  subscriberToken,
  type TestHub,
} from './helpers.js';
import { type RawResponse, rawRequest } from './raw-request.js';

/**
 * RFC 6750 challenges (issue #8, "Also decide and fix"; Mercure draft, "Error Responses"):
 * - no credentials where some are required: 401 with a bare `Bearer` challenge, no error code;
 * - a token that fails validation: 401 `error="invalid_token"`;
 * - a valid token that does not allow the operation: 403 `error="insufficient_scope"`;
 * - a malformed token presentation: 400 `error="invalid_request"`;
 * - a request malformed independently of the token: no challenge.
 * Every challenge names the RFC 9728 metadata, built from the hub's URL, never from the request.
 */

const FALLBACK_METADATA = 'http://mercure.invalid/.well-known/oauth-protected-resource/.well-known/mercure';
const SUBSCRIPTIONS = '/.well-known/mercure/subscriptions';
const TOPIC = 'https://example.com/books/1';

type Code = 'invalid_request' | 'invalid_token' | 'insufficient_scope';

function challenge(code: Code | null, metadata = FALLBACK_METADATA): string {
  return code === null
    ? `Bearer resource_metadata="${metadata}"`
    : `Bearer error="${code}", resource_metadata="${metadata}"`;
}

const past = Math.floor(Date.now() / 1000) - 3600;
const badSignature = `${subscriberToken([{ match: '*' }]).slice(0, -4)}AAAA`;
const expiredSubscriber = subscriberToken([{ match: '*' }], { exp: past });
const bareStrings = signToken({ mercure: { subscribe: ['*'] } }, SUBSCRIBER_SECRET);
const unknownMatchType = signToken(
  { mercure: { subscribe: [{ match: TOPIC, matchType: 'CEL' }] } },
  SUBSCRIBER_SECRET,
);
const unknownMatchTypePublisher = signToken(
  { mercure: { publish: [{ match: TOPIC, matchType: 'Glob' }] } },
  PUBLISHER_SECRET,
);
const noPublishClaim = signToken({ mercure: { subscribe: [{ match: '*' }] } }, PUBLISHER_SECRET);
const otherTopicOnly = publisherToken([{ match: 'https://example.com/other' }]);

interface Case {
  readonly name: string;
  readonly method?: 'GET' | 'POST';
  /** Path and query under the hub origin. */
  readonly target: string;
  readonly headers?: Record<string, string>;
  readonly body?: Record<string, string>;
  readonly status: number;
  /** The challenge's error code, null for the bare challenge, undefined for no challenge. */
  readonly code: Code | null | undefined;
}

const subscribe = `/.well-known/mercure?match=${encodeURIComponent(TOPIC)}`;
const bearer = (token: string) => ({ authorization: `Bearer ${token}` });
const cookie = (token: string) => ({ cookie: `mercureAuthorization=${token}` });

// biome-ignore format: a table, one case per line
const cases: readonly Case[] = [
  // Subscribe.
  { name: 'subscribe without a token', target: subscribe, status: 401, code: null },
  { name: 'subscribe with a bad signature', target: subscribe, headers: bearer(badSignature), status: 401, code: 'invalid_token' },
  { name: 'subscribe with an expired token', target: subscribe, headers: bearer(expiredSubscriber), status: 401, code: 'invalid_token' },
  { name: 'subscribe with 0.x bare-string claims', target: subscribe, headers: bearer(bareStrings), status: 401, code: 'invalid_token' },
  { name: 'subscribe with an unknown matchType in the token', target: subscribe, headers: bearer(unknownMatchType), status: 401, code: 'invalid_token' },
  { name: 'subscribe with an unknown matchType in the token, by query', target: `${subscribe}&authorization=${unknownMatchType}`, status: 401, code: 'invalid_token' },
  { name: 'subscribe with a garbage token', target: subscribe, headers: bearer('not-a-jwt'), status: 401, code: 'invalid_token' },
  { name: 'subscribe with Basic credentials', target: subscribe, headers: { authorization: 'Basic dXNlcjpwYXNz' }, status: 400, code: 'invalid_request' },
  { name: 'subscribe with a repeated query token', target: `${subscribe}&authorization=a&authorization=b`, status: 400, code: 'invalid_request' },
  { name: 'subscribe with a token over plain HTTP', target: subscribe, headers: { ...bearer(expiredSubscriber), 'x-forwarded-proto': 'http' }, status: 400, code: 'invalid_request' },
  // Authentication comes first (issue #8): without a token, a malformed query is still a 401.
  { name: 'subscribe with an unknown matcher parameter and no token', target: '/.well-known/mercure?matchGlob=a', status: 401, code: null },
  { name: 'subscribe with an unknown matcher parameter (valid token)', target: '/.well-known/mercure?matchGlob=a', headers: bearer(subscriberToken([{ match: '*' }])), status: 501, code: undefined },
  { name: 'subscribe without a matcher (valid token)', target: '/.well-known/mercure', headers: bearer(subscriberToken([{ match: '*' }])), status: 400, code: undefined },
  // Publish.
  { name: 'publish without a token', method: 'POST', target: '/.well-known/mercure', body: { topic: TOPIC }, status: 401, code: null },
  { name: 'publish with a subscriber-signed token', method: 'POST', target: '/.well-known/mercure', headers: bearer(subscriberToken([{ match: '*' }])), body: { topic: TOPIC }, status: 401, code: 'invalid_token' },
  { name: 'publish with an unknown matchType in the token', method: 'POST', target: '/.well-known/mercure', headers: bearer(unknownMatchTypePublisher), body: { topic: TOPIC }, status: 401, code: 'invalid_token' },
  { name: 'publish with no publish claim', method: 'POST', target: '/.well-known/mercure', headers: bearer(noPublishClaim), body: { topic: TOPIC }, status: 403, code: 'insufficient_scope' },
  { name: 'publish to a topic the token does not allow', method: 'POST', target: '/.well-known/mercure', headers: bearer(otherTopicOnly), body: { topic: TOPIC }, status: 403, code: 'insufficient_scope' },
  { name: 'publish by cookie without Origin or Referer', method: 'POST', target: '/.well-known/mercure', headers: cookie(publisherToken()), body: { topic: TOPIC }, status: 400, code: 'invalid_request' },
  { name: 'publish by cookie from Origin: null', method: 'POST', target: '/.well-known/mercure', headers: { ...cookie(publisherToken()), origin: 'null' }, body: { topic: TOPIC }, status: 403, code: 'insufficient_scope' },
  { name: 'publish by cookie from a foreign origin', method: 'POST', target: '/.well-known/mercure', headers: { ...cookie(publisherToken()), origin: 'https://evil.example' }, body: { topic: TOPIC }, status: 403, code: 'insufficient_scope' },
  { name: 'publish without a topic (no token involved)', method: 'POST', target: '/.well-known/mercure', headers: bearer(publisherToken()), body: { data: 'x' }, status: 400, code: undefined },
  // Subscriptions API.
  { name: 'subscriptions API without a token', target: SUBSCRIPTIONS, status: 401, code: null },
  { name: 'subscriptions API with an expired token', target: SUBSCRIPTIONS, headers: bearer(expiredSubscriber), status: 401, code: 'invalid_token' },
  { name: 'subscriptions API with an unknown matchType in the token', target: SUBSCRIPTIONS, headers: bearer(unknownMatchType), status: 401, code: 'invalid_token' },
  { name: 'subscriptions API with a claim that does not cover it', target: SUBSCRIPTIONS, headers: bearer(subscriberToken([{ match: TOPIC }])), status: 403, code: 'insufficient_scope' },
  { name: 'subscriptions API with Basic credentials', target: SUBSCRIPTIONS, headers: { authorization: 'Basic dXNlcjpwYXNz' }, status: 400, code: 'invalid_request' },
  { name: 'subscriptions API allowed', target: SUBSCRIPTIONS, headers: bearer(subscriberToken([{ match: SUBSCRIPTIONS }])), status: 200, code: undefined },
];

function send(hub: TestHub, testCase: Case, extraHeaders: Record<string, string> = {}): Promise<RawResponse> {
  const method = testCase.method ?? 'GET';
  const headers: Record<string, string> = { ...SECURE, ...testCase.headers, ...extraHeaders };
  if (method === 'POST') headers['content-type'] = 'application/x-www-form-urlencoded';
  return rawRequest(hub.origin, testCase.target, {
    method,
    headers,
    ...(testCase.body ? { body: new URLSearchParams(testCase.body).toString() } : {}),
  });
}

describe('RFC 6750 challenges on every hub 401/403', () => {
  let hub: TestHub;
  before(async () => {
    hub = await startTestHub('memory', { MERCURE_SUBSCRIPTIONS: '1', MERCURE_HEARTBEAT: '0' });
  });
  after(() => hub.close());

  for (const testCase of cases) {
    const expected = testCase.code === undefined ? 'no challenge' : challenge(testCase.code);
    test(`${testCase.name} → ${testCase.status}, ${expected}`, async () => {
      const response = await send(hub, testCase);
      assert.equal(response.status, testCase.status);
      const header = response.headers['www-authenticate'];
      if (testCase.code === undefined) assert.equal(header, undefined);
      else assert.equal(header, challenge(testCase.code));
    });
  }

  test('every case of the table that answers 401 or 403 carries a challenge (the table covers both)', () => {
    const refusals = cases.filter((testCase) => testCase.status === 401 || testCase.status === 403);
    assert.ok(refusals.some((testCase) => testCase.status === 401));
    assert.ok(refusals.some((testCase) => testCase.status === 403));
    for (const refusal of refusals) assert.notEqual(refusal.code, undefined, refusal.name);
  });
});

describe('the challenge names the configured hub URL, whatever Host the client sends', () => {
  let hub: TestHub;
  const metadata = 'https://hub.example.com/.well-known/oauth-protected-resource/.well-known/mercure';
  before(async () => {
    hub = await startTestHub('memory', {
      MERCURE_SUBSCRIPTIONS: '1',
      MERCURE_HEARTBEAT: '0',
      MERCURE_PUBLIC_URL: 'https://hub.example.com/.well-known/mercure',
    });
  });
  after(() => hub.close());

  for (const headers of [{}, { host: 'evil.example' }, { 'x-forwarded-host': 'evil.example' }] as Record<
    string,
    string
  >[]) {
    test(`resource_metadata with ${JSON.stringify(headers)}`, async () => {
      for (const testCase of cases.filter((candidate) => candidate.code !== undefined)) {
        const response = await send(hub, testCase, headers);
        assert.equal(response.status, testCase.status, testCase.name);
        assert.equal(response.headers['www-authenticate'], challenge(testCase.code ?? null, metadata));
      }
    });
  }

  test('a public URL with a path prefix keeps it after the well-known segment (RFC 9728 §3.1)', async () => {
    const prefixed = await startTestHub('memory', {
      MERCURE_PUBLIC_URL: 'https://example.com/hub/.well-known/mercure',
    });
    try {
      const response = await rawRequest(prefixed.origin, '/.well-known/mercure?match=a', { headers: SECURE });
      assert.equal(response.status, 401);
      assert.equal(
        response.headers['www-authenticate'],
        'Bearer resource_metadata="https://example.com/.well-known/oauth-protected-resource/hub/.well-known/mercure"',
      );
    } finally {
      await prefixed.close();
    }
  });
});

describe('challenges are readable by cross-origin scripts', () => {
  test('a CORS 401 exposes WWW-Authenticate', async () => {
    const hub = await startTestHub('memory', { MERCURE_CORS_ORIGINS: 'https://app.example' });
    try {
      const response = await rawRequest(hub.origin, subscribe, {
        headers: { ...SECURE, origin: 'https://app.example' },
      });
      assert.equal(response.status, 401);
      assert.equal(response.headers['www-authenticate'], challenge(null));
      assert.equal(response.headers['access-control-allow-origin'], 'https://app.example');
      assert.match(String(response.headers['access-control-expose-headers']), /(^|, )WWW-Authenticate(,|$)/);
    } finally {
      await hub.close();
    }
  });
});

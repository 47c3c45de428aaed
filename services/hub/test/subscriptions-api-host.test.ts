import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import {
  BACKENDS,
  cleanupRedis,
  SECURE,
  SseStream,
  startTestHub,
  subscriberToken,
  subscribeUrl,
  type TestHub,
} from './helpers.js';
import { type RawResponse, rawRequest } from './raw-request.js';

after(cleanupRedis);

/**
 * Issue #8, defect 4: the subscriptions API checked the token's claim against a URL the client
 * chose (an absolute-form request target, or the Host header). It must check the hub's own URL:
 * MERCURE_PUBLIC_URL when set, else the fixed canonical base (docs/hub.md, subscriptions API).
 */

const SUBSCRIPTIONS = '/.well-known/mercure/subscriptions';
/** A "tenant" token: its claim names tenant1's host only, through a URI template. */
const tenant1Token = subscriberToken([
  { match: 'https://tenant1.example.com/{+path}', matchType: 'URITemplate' },
]);
const tenant1Pattern = subscriberToken([
  { match: 'https://tenant1.example.com/.well-known/mercure/subscriptions*', matchType: 'URLPattern' },
]);

function rawGet(hub: TestHub, target: string, headers: Record<string, string>): Promise<RawResponse> {
  return rawRequest(hub.origin, target, { headers: { ...SECURE, ...headers } });
}

for (const backend of BACKENDS) {
  describe(`subscriptions API: the claim is checked against the hub's URL, not the client's (${backend})`, () => {
    let hub: TestHub;
    let victim: SseStream;
    before(async () => {
      hub = await startTestHub(backend, { MERCURE_SUBSCRIPTIONS: '1', MERCURE_HEARTBEAT: '0' });
      // Another tenant's private subscription, with a payload that must not leak.
      victim = await SseStream.open(
        subscribeUrl(hub.url, [['match', 'https://tenant2.example.com/secret']]),
        {
          authorization: `Bearer ${subscriberToken([{ match: 'https://tenant2.example.com/secret', payload: { user: 'bob' } }])}`,
        },
      );
      assert.equal(victim.status, 200, victim.body);
    });
    after(async () => {
      victim.close();
      await hub.close();
    });

    const forged: [string, string, Record<string, string>][] = [
      ['absolute-form target', `https://tenant1.example.com${SUBSCRIPTIONS}`, {}],
      ['absolute-form target, http scheme', `http://tenant1.example.com${SUBSCRIPTIONS}`, {}],
      ['absolute-form target with a matchType', `https://tenant1.example.com${SUBSCRIPTIONS}/Exact`, {}],
      ['Host header', SUBSCRIPTIONS, { host: 'tenant1.example.com' }],
      ['X-Forwarded-Host header', SUBSCRIPTIONS, { 'x-forwarded-host': 'tenant1.example.com' }],
      [
        'Host and X-Forwarded-Host together',
        SUBSCRIPTIONS,
        { host: 'tenant1.example.com', 'x-forwarded-host': 'tenant1.example.com' },
      ],
    ];
    for (const [name, target, headers] of forged) {
      for (const [tokenName, token] of [
        ['URITemplate claim', tenant1Token],
        ['URLPattern claim', tenant1Pattern],
      ] as const) {
        test(`a tenant1 token (${tokenName}) cannot list through a forged ${name}`, async () => {
          const response = await rawGet(hub, target, { ...headers, authorization: `Bearer ${token}` });
          assert.equal(response.status, 403, response.body);
          assert.doesNotMatch(response.body, /tenant2|bob/);
        });
      }
    }
  });

  describe(`subscriptions API with MERCURE_PUBLIC_URL (${backend})`, () => {
    let hub: TestHub;
    before(async () => {
      hub = await startTestHub(backend, {
        MERCURE_SUBSCRIPTIONS: '1',
        MERCURE_HEARTBEAT: '0',
        MERCURE_PUBLIC_URL: 'https://tenant1.example.com/.well-known/mercure',
      });
    });
    after(() => hub.close());

    test('a claim naming the configured URL lists the subscriptions', async () => {
      for (const token of [tenant1Token, tenant1Pattern]) {
        const response = await rawGet(hub, SUBSCRIPTIONS, { authorization: `Bearer ${token}` });
        assert.equal(response.status, 200, response.body);
        const document = JSON.parse(response.body) as { id: string; type: string };
        assert.equal(document.type, 'Subscriptions');
        assert.equal(document.id, SUBSCRIPTIONS);
      }
    });

    test('a claim naming another host is refused, whatever Host or target the client sends', async () => {
      const tenant2 = subscriberToken([
        { match: 'https://tenant2.example.com/{+path}', matchType: 'URITemplate' },
      ]);
      for (const [target, headers] of [
        [SUBSCRIPTIONS, {}],
        [SUBSCRIPTIONS, { host: 'tenant2.example.com' }],
        [SUBSCRIPTIONS, { 'x-forwarded-host': 'tenant2.example.com' }],
        [`https://tenant2.example.com${SUBSCRIPTIONS}`, {}],
      ] as const) {
        const response = await rawGet(hub, target, { ...headers, authorization: `Bearer ${tenant2}` });
        assert.equal(response.status, 403, `${target} ${JSON.stringify(headers)}: ${response.body}`);
      }
    });

    test('the document id is the canonical path, never the request target', async () => {
      const response = await rawGet(hub, `https://evil.example.net${SUBSCRIPTIONS}`, {
        authorization: `Bearer ${tenant1Token}`,
      });
      assert.equal(response.status, 200, response.body);
      assert.equal((JSON.parse(response.body) as { id: string }).id, SUBSCRIPTIONS);
    });
  });
}

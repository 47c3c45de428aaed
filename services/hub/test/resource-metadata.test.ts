import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { startTestHub, type TestHub } from './helpers.js';
import { rawRequest } from './raw-request.js';

/** OAuth 2.0 Protected Resource Metadata (RFC 9728), named by every challenge (challenges.test.ts). */

const METADATA_PATH = '/.well-known/oauth-protected-resource/.well-known/mercure';

// [name, environment, expected document]
// biome-ignore format: a table, one case per line
const cases: readonly (readonly [string, Record<string, string>, Record<string, unknown>])[] = [
  ['defaults: the fixed canonical hub URL', {}, {
    resource: 'http://mercure.invalid/.well-known/mercure',
    bearer_methods_supported: ['header', 'query'],
    authorization_details_types_supported: ['https://mercure.rocks/authorization-detail', 'mercure'],
    mercure_cookie: 'mercureAuthorization',
    mercure_matcher_types_supported: ['exact', 'urlpattern', 'regexp', 'uritemplate'],
  }],
  ['MERCURE_PUBLIC_URL, a cookie name, the subscriptions API', {
    MERCURE_PUBLIC_URL: 'https://hub.example.com/.well-known/mercure',
    MERCURE_COOKIE_NAME: 'hubToken',
    MERCURE_SUBSCRIPTIONS: '1',
  }, {
    resource: 'https://hub.example.com/.well-known/mercure',
    bearer_methods_supported: ['header', 'query'],
    authorization_details_types_supported: ['https://mercure.rocks/authorization-detail', 'mercure'],
    mercure_cookie: 'hubToken',
    mercure_matcher_types_supported: ['exact', 'urlpattern', 'regexp', 'uritemplate'],
    mercure_subscriptions: true,
  }],
];

for (const [name, environment, expected] of cases) {
  describe(`protected resource metadata (${name})`, () => {
    let hub: TestHub;
    before(async () => {
      hub = await startTestHub('memory', environment);
    });
    after(() => hub.close());

    test('served without a token, as JSON, with exactly the members the hub supports', async () => {
      const response = await fetch(`${hub.origin}${METADATA_PATH}`);
      assert.equal(response.status, 200);
      assert.match(response.headers.get('content-type') ?? '', /^application\/json/);
      assert.deepEqual(await response.json(), expected);
    });

    test('the resource never comes from Host or X-Forwarded-Host', async () => {
      for (const headers of [{ host: 'evil.example' }, { 'x-forwarded-host': 'evil.example' }] as Record<
        string,
        string
      >[]) {
        const response = await rawRequest(hub.origin, METADATA_PATH, { headers });
        assert.equal(response.status, 200);
        assert.deepEqual(JSON.parse(response.body), expected);
      }
      const absolute = await rawRequest(hub.origin, `https://evil.example${METADATA_PATH}`);
      assert.deepEqual(JSON.parse(absolute.body), expected);
    });
  });
}

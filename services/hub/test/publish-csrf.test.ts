import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { publish, publisherToken, startTestHub, type TestHub } from './helpers.js';

/**
 * CSRF rule for cookie-authenticated publishing (docs/hub.md, publish): an Origin header, when
 * present, decides, even `Origin: null` (issue #8: sandboxed frames and `data:` documents send
 * it, often with a Referer naming an allowed page); Referer counts only when Origin is absent.
 */

const TOPIC = 'https://example.com/books/1';
const APP = 'https://app.example';

// [name, publish origins, request headers (besides the cookie), expected status]
// biome-ignore format: a table, one case per line
const cases: readonly (readonly [string, string, Record<string, string>, number])[] = [
  ['allowed Origin', APP, { origin: APP }, 200],
  ['allowed Referer, no Origin', APP, { referer: `${APP}/page` }, 200],
  ['Origin: null', APP, { origin: 'null' }, 403],
  ['Origin: null with an allowed Referer (no fallback)', APP, { origin: 'null', referer: `${APP}/page` }, 403],
  ['Origin: null with origins `*`', '*', { origin: 'null' }, 403],
  ['Origin: null with `*` and a Referer', '*', { origin: 'null', referer: `${APP}/page` }, 403],
  ['an empty Origin with an allowed Referer', APP, { origin: '', referer: `${APP}/page` }, 403],
  ['a foreign Origin with an allowed Referer', APP, { origin: 'https://evil.example', referer: `${APP}/page` }, 403],
  ['a foreign Referer, no Origin', APP, { referer: 'https://evil.example/page' }, 403],
  ['an opaque (data:) Referer, no Origin', '*', { referer: 'data:text/html,x' }, 403],
  ['neither Origin nor Referer', APP, {}, 400],
  ['any real Origin with `*`', '*', { origin: 'https://anyone.example' }, 200],
];

for (const origins of [APP, '*']) {
  describe(`cookie publish, MERCURE_PUBLISH_ORIGINS=${origins}`, () => {
    let hub: TestHub;
    before(async () => {
      hub = await startTestHub('memory', { MERCURE_PUBLISH_ORIGINS: origins });
    });
    after(() => hub.close());

    for (const [name, allowed, headers, status] of cases.filter(([, allowed]) => allowed === origins)) {
      test(`${name} → ${status}`, async () => {
        const result = await publish(
          hub.url,
          { topic: TOPIC },
          { headers: { cookie: `mercureAuthorization=${publisherToken()}`, ...headers } },
        );
        assert.equal(result.status, status, `${allowed}: ${result.body}`);
        if (status === 403 && headers.origin === 'null') assert.match(result.body, /Origin: null/);
      });
    }

    test('a bearer token needs no Origin: Origin: null does not matter there', async () => {
      const result = await publish(
        hub.url,
        { topic: TOPIC },
        { token: publisherToken(), headers: { origin: 'null' } },
      );
      assert.equal(result.status, 200, result.body);
    });
  });
}

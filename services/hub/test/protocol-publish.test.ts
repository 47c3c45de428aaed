import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import {
  BACKENDS,
  cleanupRedis,
  PUBLISHER_SECRET,
  publish,
  publisherToken,
  SseStream,
  signToken,
  startTestHub,
  subscribeUrl,
  type TestHub,
} from './helpers.js';

after(cleanupRedis);

for (const backend of BACKENDS) {
  describe(`publish protocol (${backend} backend)`, () => {
    let hub: TestHub;
    before(async () => {
      hub = await startTestHub(backend, { MERCURE_ANONYMOUS: '1', MERCURE_HEARTBEAT: '0' });
    });
    after(() => hub.close());

    test('success: 200, text/plain, the id as body', async () => {
      const result = await publish(
        hub.url,
        { topic: 'https://example.com/p', data: 'x', unknownField: 'ignored' },
        {
          token: publisherToken(),
        },
      );
      assert.equal(result.status, 200);
      assert.match(result.headers.get('content-type') ?? '', /^text\/plain/);
      assert.match(result.body, /^urn:uuid:/);
    });

    const invalid: { name: string; fields: [string, string][] }[] = [
      { name: 'a missing topic', fields: [['data', 'x']] },
      { name: 'an empty topic', fields: [['topic', '']] },
      {
        name: 'the reserved type "mercure"',
        fields: [
          ['topic', 'https://example.com/a'],
          ['type', 'mercure'],
        ],
      },
      {
        name: 'a non-integer retry',
        fields: [
          ['topic', 'https://example.com/a'],
          ['retry', '1.5'],
        ],
      },
      {
        name: 'a negative retry',
        fields: [
          ['topic', 'https://example.com/a'],
          ['retry', '-1'],
        ],
      },
      {
        name: 'an id starting with #',
        fields: [
          ['topic', 'https://example.com/a'],
          ['id', '#x'],
        ],
      },
      {
        name: 'the reserved id "earliest"',
        fields: [
          ['topic', 'https://example.com/a'],
          ['id', 'earliest'],
        ],
      },
      { name: 'a control character in a topic', fields: [['topic', 'https://example.com/a\nb']] },
      {
        name: 'a control character in an id',
        fields: [
          ['topic', 'https://example.com/a'],
          ['id', 'a\rb'],
        ],
      },
      {
        name: 'a newline in the type',
        fields: [
          ['topic', 'https://example.com/a'],
          ['type', 'a\nb'],
        ],
      },
      { name: 'a reserved relative topic', fields: [['topic', '/.well-known/mercure/subscriptions/x']] },
      { name: 'a reserved absolute topic', fields: [['topic', 'https://hub.example/.well-known/mercure']] },
      {
        name: 'more than 1000 topics',
        fields: Array.from({ length: 1001 }, (_, index): [string, string] => [
          'topic',
          `https://example.com/${index}`,
        ]),
      },
    ];
    for (const invalidCase of invalid) {
      test(`400 for ${invalidCase.name}`, async () => {
        const result = await publish(hub.url, invalidCase.fields, { token: publisherToken() });
        assert.equal(result.status, 400, result.body);
      });
    }

    test('413 for a body over 1 MiB', async () => {
      const result = await publish(
        hub.url,
        { topic: 'https://example.com/big', data: 'x'.repeat(1024 * 1024 + 10) },
        { token: publisherToken() },
      );
      assert.equal(result.status, 413);
    });

    test('401 without a token, and for an invalid one', async () => {
      assert.equal((await publish(hub.url, { topic: 'https://example.com/a' })).status, 401);
      const wrongKey = signToken(
        { mercure: { publish: [{ match: '*' }] } },
        'another-secret-another-secret-123',
      );
      assert.equal(
        (await publish(hub.url, { topic: 'https://example.com/a' }, { token: wrongKey })).status,
        401,
      );
      const expired = publisherToken([{ match: '*' }], { exp: Math.floor(Date.now() / 1000) - 3600 });
      assert.equal(
        (await publish(hub.url, { topic: 'https://example.com/a' }, { token: expired })).status,
        401,
      );
    });

    test('401 for 0.x bare-string claims', async () => {
      const bare = signToken({ mercure: { publish: ['*'] } }, PUBLISHER_SECRET);
      assert.equal((await publish(hub.url, { topic: 'https://example.com/a' }, { token: bare })).status, 401);
    });

    test('403 when the token has no publish claim, or does not allow every topic', async () => {
      const none = publisherToken([]);
      assert.equal((await publish(hub.url, { topic: 'https://example.com/a' }, { token: none })).status, 403);
      const books = publisherToken([{ match: 'https://example.com/books/:id', matchType: 'URLPattern' }]);
      assert.equal(
        (await publish(hub.url, { topic: 'https://example.com/books/1' }, { token: books })).status,
        200,
      );
      const partly = await publish(
        hub.url,
        [
          ['topic', 'https://example.com/books/1'],
          ['topic', 'https://example.com/users/1'],
        ],
        { token: books },
      );
      assert.equal(partly.status, 403);
    });

    test('a refused publication is not delivered', async () => {
      const stream = await SseStream.open(subscribeUrl(hub.url, [['match', 'https://example.com/refused']]));
      const books = publisherToken([{ match: 'https://example.com/books/:id', matchType: 'URLPattern' }]);
      await publish(hub.url, { topic: 'https://example.com/refused' }, { token: books });
      const id = (
        await publish(hub.url, { topic: 'https://example.com/refused' }, { token: publisherToken() })
      ).body;
      await stream.waitForEvents(1);
      assert.equal(stream.events[0]?.id, id);
      stream.close();
    });

    test('a token over plain HTTP is refused before it is evaluated', async () => {
      const result = await publish(
        hub.url,
        { topic: 'https://example.com/a' },
        {
          token: publisherToken(),
          headers: { 'x-forwarded-proto': 'http' },
        },
      );
      assert.equal(result.status, 400);
      assert.match(result.body, /HTTPS/);
    });

    test('cookie-authenticated publishing requires an allowed Origin or Referer', async () => {
      const cookie = { cookie: `mercureAuthorization=${publisherToken()}` };
      const noOrigin = await publish(hub.url, { topic: 'https://example.com/c' }, { headers: cookie });
      assert.equal(noOrigin.status, 400);
      const badOrigin = await publish(
        hub.url,
        { topic: 'https://example.com/c' },
        {
          headers: { ...cookie, origin: 'https://evil.example' },
        },
      );
      assert.equal(badOrigin.status, 403);
    });
  });
}

describe('publish origins', () => {
  let hub: TestHub;
  before(async () => {
    hub = await startTestHub('memory', { MERCURE_PUBLISH_ORIGINS: 'https://app.example' });
  });
  after(() => hub.close());

  test('an allowed Origin (or Referer) lets a cookie-authenticated publish through', async () => {
    const cookie = `mercureAuthorization=${publisherToken()}`;
    const byOrigin = await publish(
      hub.url,
      { topic: 'https://example.com/c' },
      {
        headers: { cookie, origin: 'https://app.example' },
      },
    );
    assert.equal(byOrigin.status, 200, byOrigin.body);
    const byReferer = await publish(
      hub.url,
      { topic: 'https://example.com/c' },
      {
        headers: { cookie, referer: 'https://app.example/page' },
      },
    );
    assert.equal(byReferer.status, 200, byReferer.body);
    const other = await publish(
      hub.url,
      { topic: 'https://example.com/c' },
      {
        headers: { cookie, origin: 'https://other.example' },
      },
    );
    assert.equal(other.status, 403);
  });

  test('a bearer-authenticated publish needs no Origin', async () => {
    const result = await publish(hub.url, { topic: 'https://example.com/c' }, { token: publisherToken() });
    assert.equal(result.status, 200);
  });
});

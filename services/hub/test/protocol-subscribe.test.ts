import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import {
  BACKENDS,
  cleanupRedis,
  publishOk,
  SseStream,
  startTestHub,
  subscriberToken,
  subscribeUrl,
  type TestHub,
} from './helpers.js';

after(cleanupRedis);

for (const backend of BACKENDS) {
  describe(`subscribe protocol (${backend} backend)`, () => {
    let hub: TestHub;
    before(async () => {
      hub = await startTestHub(backend, { MERCURE_ANONYMOUS: '1', MERCURE_HEARTBEAT: '0' });
    });
    after(() => hub.close());

    test('stream headers, opening comment, and the event format', async () => {
      const stream = await SseStream.open(subscribeUrl(hub.url, [['match', 'https://example.com/format']]));
      assert.equal(stream.status, 200);
      assert.equal(stream.headers['content-type'], 'text/event-stream');
      assert.equal(
        stream.headers['cache-control'],
        'private, no-cache, no-store, must-revalidate, max-age=0',
      );
      assert.equal(stream.headers['x-accel-buffering'], 'no');
      assert.equal(stream.headers['last-event-id'], undefined, 'no cursor, no Last-Event-ID header');
      assert.ok(stream.comments >= 1, 'a comment flushes the headers');
      const id = await publishOk(hub.url, [
        ['topic', 'https://example.com/format'],
        ['data', 'line one\r\nline two\rline three\nline four'],
        ['type', 'custom'],
        ['retry', '1500'],
      ]);
      const [event] = await stream.waitForEvents(1);
      assert.deepEqual(event, {
        id,
        event: 'custom',
        retry: 1500,
        data: 'line one\nline two\nline three\nline four',
      });
      stream.close();
    });

    test('every event has an id; generated ids are urn:uuid:<UUIDv7>', async () => {
      const stream = await SseStream.open(subscribeUrl(hub.url, [['match', 'https://example.com/ids']]));
      const id = await publishOk(hub.url, { topic: 'https://example.com/ids' });
      assert.match(id, /^urn:uuid:[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
      const supplied = await publishOk(hub.url, {
        topic: 'https://example.com/ids',
        id: 'my-own-id',
        data: '',
      });
      assert.equal(supplied, 'my-own-id');
      const events = await stream.waitForEvents(2);
      assert.deepEqual(
        events.map((event) => event.id),
        [id, 'my-own-id'],
      );
      assert.equal(events[1]?.data, '');
      stream.close();
    });

    const matcherCases: { name: string; parameters: [string, string][]; hits: string[]; misses: string[] }[] =
      [
        {
          name: 'match (exact, case-sensitive)',
          parameters: [['match', 'https://example.com/Books/1']],
          hits: ['https://example.com/Books/1'],
          misses: ['https://example.com/books/1'],
        },
        {
          name: 'MATCHEXACT (names compare case-insensitively)',
          parameters: [['MATCHEXACT', 'https://example.com/exact']],
          hits: ['https://example.com/exact'],
          misses: ['https://example.com/exact/2'],
        },
        {
          name: 'match_exact (Mercure 1.0 spelling)',
          parameters: [['match_exact', 'https://example.com/one-zero']],
          hits: ['https://example.com/one-zero'],
          misses: ['https://example.com/one-zero?x'],
        },
        {
          name: 'matchURLPattern',
          parameters: [['matchURLPattern', 'https://example.com/books/:id']],
          hits: ['https://example.com/books/7'],
          misses: ['https://example.com/books/7/reviews', 'https://example.com/authors/7'],
        },
        {
          name: 'match_urlpattern (Mercure 1.0 spelling)',
          parameters: [['match_urlpattern', 'https://example.com/films/:id']],
          hits: ['https://example.com/films/3'],
          misses: ['https://example.com/films'],
        },
        {
          name: 'matchRegexp',
          parameters: [['matchRegexp', 'https://example\\.com/rx/[0-9]+']],
          hits: ['https://example.com/rx/42'],
          misses: ['https://example.com/rx/abc'],
        },
        {
          name: 'matchURITemplate',
          parameters: [['matchURITemplate', 'https://example.com/tpl/{id}']],
          hits: ['https://example.com/tpl/9'],
          misses: ['https://example.com/other/9'],
        },
        {
          name: 'several matchers: one subscription each',
          parameters: [
            ['match', 'https://example.com/multi/a'],
            ['matchURLPattern', 'https://example.com/multi/b/:x'],
          ],
          hits: ['https://example.com/multi/a', 'https://example.com/multi/b/1'],
          misses: ['https://example.com/multi/c'],
        },
      ];
    for (const matcherCase of matcherCases) {
      test(`matcher ${matcherCase.name}`, async () => {
        const stream = await SseStream.open(subscribeUrl(hub.url, matcherCase.parameters));
        assert.equal(stream.status, 200, stream.body);
        for (const topic of matcherCase.misses) await publishOk(hub.url, { topic, data: `miss ${topic}` });
        const expected: string[] = [];
        for (const topic of matcherCase.hits)
          expected.push(await publishOk(hub.url, { topic, data: `hit ${topic}` }));
        // A final marker proves the misses were not merely late: delivery is in publish order.
        await stream.waitForEvents(expected.length);
        assert.deepEqual(
          stream.events.map((event) => event.id),
          expected,
        );
        stream.close();
      });
    }

    test('an update reaches a subscriber matching only an alternate topic', async () => {
      const stream = await SseStream.open(subscribeUrl(hub.url, [['match', 'https://example.com/alt']]));
      const id = await publishOk(hub.url, [
        ['topic', 'https://example.com/canonical'],
        ['topic', 'https://example.com/alt'],
      ]);
      const [event] = await stream.waitForEvents(1);
      assert.equal(event?.id, id);
      stream.close();
    });

    const errorCases: { name: string; parameters: [string, string][]; status: number }[] = [
      { name: 'no matcher', parameters: [], status: 400 },
      { name: 'only unrelated parameters', parameters: [['foo', 'bar']], status: 400 },
      { name: 'unsupported matcher type', parameters: [['matchGlob', 'https://example.com/*']], status: 501 },
      { name: 'a regexp that does not compile', parameters: [['matchRegexp', '(unclosed']], status: 400 },
      {
        name: 'a URL pattern that does not compile',
        parameters: [['matchURLPattern', 'https://example.com/(']],
        status: 400,
      },
      {
        name: 'more than 100 matchers',
        parameters: Array.from({ length: 101 }, (_, index): [string, string] => [
          'match',
          `https://example.com/${index}`,
        ]),
        status: 400,
      },
      {
        name: 'a pattern over 4096 bytes',
        parameters: [['match', `https://example.com/${'x'.repeat(4100)}`]],
        status: 400,
      },
    ];
    for (const errorCase of errorCases) {
      test(`refuses ${errorCase.name} with ${errorCase.status}`, async () => {
        const response = await SseStream.open(subscribeUrl(hub.url, errorCase.parameters));
        assert.equal(response.status, errorCase.status);
        assert.doesNotMatch(response.body, /at position|SyntaxError|stack/i, 'no compiler internals leak');
      });
    }

    test('HEAD answers with the stream headers and no body', async () => {
      const response = await fetch(subscribeUrl(hub.url, [['match', 'https://example.com/head']]), {
        method: 'HEAD',
        headers: { 'x-forwarded-proto': 'https' },
      });
      assert.equal(response.status, 200);
      assert.equal(response.headers.get('content-type'), 'text/event-stream');
    });

    test('anonymous subscribers get public updates only', async () => {
      const stream = await SseStream.open(subscribeUrl(hub.url, [['match', 'https://example.com/anon']]));
      await publishOk(hub.url, { topic: 'https://example.com/anon', private: 'on', data: 'secret' });
      const publicId = await publishOk(hub.url, { topic: 'https://example.com/anon', data: 'public' });
      await stream.waitForEvents(1);
      assert.deepEqual(
        stream.events.map((event) => event.id),
        [publicId],
      );
      stream.close();
    });

    test('an invalid token is refused with 401 even though anonymous access is enabled', async () => {
      const stream = await SseStream.open(subscribeUrl(hub.url, [['match', 'https://example.com/x']]), {
        authorization: 'Bearer not.a.token',
      });
      assert.equal(stream.status, 401);
      const forged = `${subscriberToken([{ match: '*' }]).slice(0, -4)}AAAA`;
      const second = await SseStream.open(subscribeUrl(hub.url, [['match', 'https://example.com/x']]), {
        authorization: `Bearer ${forged}`,
      });
      assert.equal(second.status, 401);
    });
  });
}

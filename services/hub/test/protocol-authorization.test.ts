import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { KeyClock } from '@herald/redis';
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
  describe(`subscriber authorization (${backend} backend)`, () => {
    let hub: TestHub;
    before(async () => {
      hub = await startTestHub(backend, { MERCURE_HEARTBEAT: '0' });
    });
    after(() => hub.close());

    test('without MERCURE_ANONYMOUS, a subscriber without a token gets 401', async () => {
      const stream = await SseStream.open(subscribeUrl(hub.url, [['match', 'https://example.com/a']]));
      assert.equal(stream.status, 401);
    });

    test('a token over plain HTTP is refused (400), never evaluated', async () => {
      const stream = await SseStream.open(subscribeUrl(hub.url, [['match', 'https://example.com/a']]), {
        authorization: `Bearer ${subscriberToken([{ match: '*' }])}`,
        'x-forwarded-proto': 'http',
      });
      assert.equal(stream.status, 400);
    });

    test('private updates are delivered iff a subscribe claim matches a canonical or alternate topic', async () => {
      const matcher: [string, string][] = [['matchURLPattern', 'https://example.com/books/:id']];
      const user42 = await SseStream.open(subscribeUrl(hub.url, matcher), {
        authorization: `Bearer ${subscriberToken([
          { match: 'https://example.com/users/42/?topic=:topic', matchType: 'URLPattern' },
        ])}`,
      });
      const user7 = await SseStream.open(subscribeUrl(hub.url, matcher), {
        authorization: `Bearer ${subscriberToken([{ match: 'https://example.com/users/7/?topic=:topic', matchType: 'URLPattern' }])}`,
      });
      const noClaims = await SseStream.open(subscribeUrl(hub.url, matcher), {
        authorization: `Bearer ${subscriberToken([])}`,
      });
      const everything = await SseStream.open(subscribeUrl(hub.url, matcher), {
        authorization: `Bearer ${subscriberToken([{ match: '*' }])}`,
      });
      const canonical = await SseStream.open(subscribeUrl(hub.url, matcher), {
        authorization: `Bearer ${subscriberToken([{ match: 'https://example.com/books/1' }])}`,
      });
      for (const stream of [user42, user7, noClaims, everything, canonical])
        assert.equal(stream.status, 200, stream.body);

      const forUser42 = await publishOk(hub.url, [
        ['topic', 'https://example.com/books/1'],
        ['topic', `https://example.com/users/42/?topic=${encodeURIComponent('https://example.com/books/1')}`],
        ['private', 'on'],
        ['data', 'for 42'],
      ]);
      const publicUpdate = await publishOk(hub.url, { topic: 'https://example.com/books/2', data: 'public' });

      await user42.waitForEvents(2);
      await user7.waitForEvents(1);
      await noClaims.waitForEvents(1);
      await everything.waitForEvents(2);
      await canonical.waitForEvents(2);
      assert.deepEqual(
        user42.events.map((event) => event.id),
        [forUser42, publicUpdate],
      );
      assert.deepEqual(
        user7.events.map((event) => event.id),
        [publicUpdate],
      );
      assert.deepEqual(
        noClaims.events.map((event) => event.id),
        [publicUpdate],
      );
      assert.deepEqual(
        everything.events.map((event) => event.id),
        [forUser42, publicUpdate],
      );
      assert.deepEqual(
        canonical.events.map((event) => event.id),
        [forUser42, publicUpdate],
      );
      for (const stream of [user42, user7, noClaims, everything, canonical]) stream.close();
    });

    test('token sources: header, then query, then cookie; only the winner is read', async () => {
      const good = subscriberToken([{ match: '*' }]);
      const url = subscribeUrl(hub.url, [['match', 'https://example.com/sources']]);
      const headerWins = await SseStream.open(`${url}&authorization=garbage`, {
        authorization: `Bearer ${good}`,
        cookie: 'mercureAuthorization=garbage',
      });
      assert.equal(headerWins.status, 200, 'an invalid query/cookie token is ignored when the header wins');
      const queryWins = await SseStream.open(`${url}&authorization=${good}`, {
        cookie: 'mercureAuthorization=garbage',
      });
      assert.equal(queryWins.status, 200);
      const cookieOnly = await SseStream.open(url, { cookie: `mercureAuthorization=${good}` });
      assert.equal(cookieOnly.status, 200);
      const badQuery = await SseStream.open(`${url}&authorization=garbage`, {
        cookie: `mercureAuthorization=${good}`,
      });
      assert.equal(badQuery.status, 401, 'the query wins over the cookie, even when invalid');

      const id = await publishOk(hub.url, { topic: 'https://example.com/sources', private: 'on' });
      for (const stream of [headerWins, queryWins, cookieOnly]) {
        const [event] = await stream.waitForEvents(1);
        assert.equal(event?.id, id);
        stream.close();
      }
    });

    test('the connection is closed at the token exp', async () => {
      // The node closes the stream on its clock, which the test moves; the token is checked at
      // connect against the real time, so its exp is ahead of that.
      const clock = new KeyClock(Date.now());
      const own = await startTestHub(backend, { MERCURE_HEARTBEAT: '0' }, { clock });
      try {
        const reasons: string[] = [];
        own.server.hub.events.on('subscriber-closed', (event: { reason: string }) =>
          reasons.push(event.reason),
        );
        // Within the default MERCURE_WRITE_TIMEOUT (10 min, closed from 8 min on).
        const exp = Math.floor(Date.now() / 1000) + 60;
        const stream = await SseStream.open(subscribeUrl(own.url, [['match', 'https://example.com/exp']]), {
          authorization: `Bearer ${subscriberToken([{ match: '*' }], { exp })}`,
        });
        assert.equal(stream.status, 200);
        const [subscriber] = [...own.server.hub.index.all()];
        assert.ok(subscriber);
        // 1 ms before exp: open (the close would run inside the clock's move).
        await clock.set(exp * 1000 - 1);
        assert.equal(subscriber.closed, false, 'open until the token exp');
        assert.deepEqual(reasons, []);
        await clock.set(exp * 1000);
        assert.equal(subscriber.closed, true, 'closed at the token exp');
        assert.deepEqual(reasons, ['token_expired']);
        await stream.closed();
        assert.ok(stream.ended);
        const expired = subscriberToken([{ match: '*' }], { exp: Math.floor(Date.now() / 1000) - 60 });
        const again = await SseStream.open(subscribeUrl(own.url, [['match', 'https://example.com/exp']]), {
          authorization: `Bearer ${expired}`,
        });
        assert.equal(again.status, 401, 'an expired token cannot open a stream');
      } finally {
        await own.close();
      }
    });
  });
}

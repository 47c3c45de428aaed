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

after(cleanupRedis);

const SUBSCRIPTIONS = '/.well-known/mercure/subscriptions';

interface SubscriptionDocument {
  id: string;
  active: boolean;
  payload?: unknown;
}
interface Collection {
  '@context': string;
  type: string;
  lastEventID: string;
  subscriptions: SubscriptionDocument[];
}

for (const backend of BACKENDS) {
  describe(`active subscriptions (${backend} backend)`, () => {
    let hub: TestHub;
    const watcherToken = subscriberToken([
      { match: `${SUBSCRIPTIONS}{/matchType}{/match}{/subscriber}`, matchType: 'URITemplate' },
      { match: SUBSCRIPTIONS },
    ]);
    before(async () => {
      hub = await startTestHub(backend, { MERCURE_SUBSCRIPTIONS: '1', MERCURE_HEARTBEAT: '0' });
    });
    after(() => hub.close());

    const get = (path: string, token?: string) =>
      fetch(`${hub.origin}${path}`, {
        headers: { ...SECURE, ...(token ? { authorization: `Bearer ${token}` } : {}) },
      });

    test('subscription events: active on connect, inactive on disconnect, with the payload', async () => {
      const watcher = await SseStream.open(
        subscribeUrl(hub.url, [['matchURITemplate', `${SUBSCRIPTIONS}{/matchType}{/match}{/subscriber}`]]),
        { authorization: `Bearer ${watcherToken}` },
      );
      assert.equal(watcher.status, 200, watcher.body);
      // The watcher's own subscription is announced too; wait for it, then for the others.
      await watcher.waitForEvents(1);
      const subscriber = await SseStream.open(
        subscribeUrl(hub.url, [['matchURLPattern', 'https://example.com/books/:id']]),
        {
          authorization: `Bearer ${subscriberToken([{ match: 'https://example.com/books/:id', matchType: 'URLPattern', payload: { user: 'alice' } }])}`,
        },
      );
      await watcher.waitForEvents(2);
      const started = watcher.events[1];
      assert.equal(started?.event, 'mercure');
      const document = JSON.parse(started?.data ?? '{}');
      assert.equal(document['@context'], 'https://mercure.rocks/');
      assert.equal(document.type, 'Subscription');
      assert.equal(document.matchType, 'URLPattern');
      assert.equal(document.match, 'https://example.com/books/:id');
      assert.match(document.subscriber, /^urn:uuid:/);
      assert.equal(document.active, true);
      assert.deepEqual(document.payload, { user: 'alice' });
      assert.equal(
        document.id,
        `${SUBSCRIPTIONS}/URLPattern/${encodeURIComponent('https://example.com/books/:id')}/${encodeURIComponent(document.subscriber)}`,
      );

      // The API lists it, and the single-subscription resource answers for it.
      const list = await get(SUBSCRIPTIONS, watcherToken);
      assert.equal(list.status, 200);
      assert.match(list.headers.get('content-type') ?? '', /^application\/ld\+json/);
      assert.ok(list.headers.get('etag'));
      assert.match(list.headers.get('link') ?? '', /rel="mercure"/);
      const collection = (await list.json()) as Collection;
      assert.equal(collection.type, 'Subscriptions');
      assert.equal(collection['@context'], 'https://mercure.rocks/');
      assert.ok(typeof collection.lastEventID === 'string');
      const listed = collection.subscriptions.find((entry) => entry.id === document.id);
      assert.ok(listed, 'the new subscription is listed');
      assert.equal(listed.active, true);
      assert.deepEqual(listed.payload, { user: 'alice' });

      const single = await get(document.id, watcherToken);
      assert.equal(single.status, 200);
      assert.equal(((await single.json()) as SubscriptionDocument).id, document.id);
      const byType = (await (await get(`${SUBSCRIPTIONS}/urlpattern`, watcherToken)).json()) as Collection;
      assert.ok(
        byType.subscriptions.some((entry) => entry.id === document.id),
        'matchType is case-insensitive',
      );

      subscriber.close();
      await watcher.until(() =>
        watcher.events.some((event) => {
          const data = JSON.parse(event.data);
          return data.id === document.id && data.active === false;
        }),
      );
      assert.equal((await get(document.id, watcherToken)).status, 404);
      watcher.close();
    });

    test('API access needs a token whose subscribe claim matches the path', async () => {
      assert.equal((await get(SUBSCRIPTIONS)).status, 401);
      const other = subscriberToken([{ match: 'https://example.com/x' }]);
      assert.equal((await get(SUBSCRIPTIONS, other)).status, 403);
      const unknown = `${SUBSCRIPTIONS}/Exact/${encodeURIComponent('https://example.com/none')}/${encodeURIComponent('urn:uuid:nobody')}`;
      assert.equal((await get(unknown, watcherToken)).status, 404);
    });

    test('subscription events are private: a subscriber without a matching claim does not get them', async () => {
      const outsider = await SseStream.open(
        subscribeUrl(hub.url, [['matchURITemplate', `${SUBSCRIPTIONS}{/matchType}{/match}{/subscriber}`]]),
        { authorization: `Bearer ${subscriberToken([{ match: 'https://example.com/x' }])}` },
      );
      const watcher = await SseStream.open(
        subscribeUrl(hub.url, [['matchURITemplate', `${SUBSCRIPTIONS}{/matchType}{/match}{/subscriber}`]]),
        { authorization: `Bearer ${watcherToken}` },
      );
      const extra = await SseStream.open(subscribeUrl(hub.url, [['match', 'https://example.com/extra']]), {
        authorization: `Bearer ${watcherToken}`,
      });
      await watcher.until(() => watcher.events.some((event) => event.data.includes('example.com%2Fextra')));
      assert.equal(outsider.events.length, 0);
      for (const stream of [outsider, watcher, extra]) stream.close();
    });
  });
}

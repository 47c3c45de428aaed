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
  describe(`history and Last-Event-ID (${backend} backend)`, () => {
    let hub: TestHub;
    const topic = 'https://example.com/history';
    const url = () => subscribeUrl(hub.url, [['match', topic]]);
    const ids: string[] = [];

    before(async () => {
      hub = await startTestHub(backend, { MERCURE_ANONYMOUS: '1', MERCURE_HEARTBEAT: '0' });
      // Unrelated traffic interleaved: replay filters by matcher too.
      for (let index = 0; index < 5; index++) {
        ids.push(await publishOk(hub.url, { topic, data: `h${index}` }));
        await publishOk(hub.url, { topic: 'https://example.com/unrelated', data: `u${index}` });
      }
    });
    after(() => hub.close());

    test('an empty history answers Last-Event-ID: earliest', async () => {
      const stream = await SseStream.open(subscribeUrl(hub.url, [['match', 'https://example.com/never']]), {
        'last-event-id': 'earliest',
      });
      assert.equal(stream.headers['last-event-id'], 'earliest');
      assert.equal(stream.headers['mercure-last-event-id'], 'earliest');
      stream.close();
    });

    test('Last-Event-ID header: replay after it, and name it in the response', async () => {
      const stream = await SseStream.open(url(), { 'last-event-id': ids[1] as string });
      assert.equal(stream.headers['last-event-id'], ids[1]);
      assert.equal(stream.headers['mercure-last-event-id'], ids[1]);
      await stream.waitForEvents(3);
      assert.deepEqual(
        stream.events.map((event) => event.id),
        ids.slice(2),
      );
      stream.close();
    });

    test('the lastEventID and last_event_id query parameters work; the header wins', async () => {
      const byQuery = await SseStream.open(`${url()}&lastEventID=${encodeURIComponent(ids[3] as string)}`);
      assert.equal(byQuery.headers['last-event-id'], ids[3]);
      await byQuery.waitForEvents(1);
      assert.deepEqual(
        byQuery.events.map((event) => event.id),
        [ids[4]],
      );
      byQuery.close();
      const oneZero = await SseStream.open(`${url()}&last_event_id=${encodeURIComponent(ids[2] as string)}`);
      assert.equal(oneZero.headers['last-event-id'], ids[2]);
      oneZero.close();
      const both = await SseStream.open(`${url()}&lastEventID=${encodeURIComponent(ids[0] as string)}`, {
        'last-event-id': ids[3] as string,
      });
      assert.equal(both.headers['last-event-id'], ids[3]);
      both.close();
    });

    test('earliest as cursor replays all retained history', async () => {
      const stream = await SseStream.open(url(), { 'last-event-id': 'earliest' });
      assert.equal(stream.headers['last-event-id'], 'earliest');
      await stream.waitForEvents(5);
      assert.deepEqual(
        stream.events.map((event) => event.id),
        ids,
      );
      stream.close();
    });

    test('an id not in history: Last-Event-ID earliest and everything retained', async () => {
      const stream = await SseStream.open(url(), { 'last-event-id': 'urn:uuid:unknown' });
      assert.equal(stream.headers['last-event-id'], 'earliest');
      await stream.waitForEvents(5);
      assert.deepEqual(
        stream.events.map((event) => event.id),
        ids,
      );
      stream.close();
    });

    test('replay then live, without gap or duplicate, under concurrent publishing', async () => {
      const live = `https://example.com/race-${backend}`;
      const published: string[] = [];
      published.push(await publishOk(hub.url, { topic: live, data: 'before' }));
      // Publish continuously while subscribers connect with the first id as cursor.
      let publishing = true;
      const publisher = (async () => {
        for (let index = 0; publishing || index < 20; index++) {
          published.push(await publishOk(hub.url, { topic: live, data: `p${index}` }));
        }
      })();
      const streams = await Promise.all(
        Array.from({ length: 8 }, () =>
          SseStream.open(subscribeUrl(hub.url, [['match', live]]), {
            'last-event-id': published[0] as string,
          }),
        ),
      );
      publishing = false;
      await publisher;
      const marker = await publishOk(hub.url, { topic: live, data: 'end' });
      published.push(marker);
      for (const stream of streams) {
        await stream.until(() => stream.events.some((event) => event.id === marker));
        assert.deepEqual(
          stream.events.map((event) => event.id),
          published.slice(1),
          'exactly the updates after the cursor, in order',
        );
        stream.close();
      }
    });

    test('replayed private updates are checked against the current token', async () => {
      const privateTopic = 'https://example.com/private-history';
      const first = await publishOk(hub.url, { topic: privateTopic, data: 'start' });
      const secret = await publishOk(hub.url, { topic: privateTopic, private: 'on', data: 'secret' });
      const last = await publishOk(hub.url, { topic: privateTopic, data: 'public' });
      const allowed = await SseStream.open(subscribeUrl(hub.url, [['match', privateTopic]]), {
        'last-event-id': first,
        authorization: `Bearer ${subscriberToken([{ match: privateTopic }])}`,
      });
      const denied = await SseStream.open(subscribeUrl(hub.url, [['match', privateTopic]]), {
        'last-event-id': first,
        authorization: `Bearer ${subscriberToken([{ match: 'https://example.com/other' }])}`,
      });
      const anonymous = await SseStream.open(subscribeUrl(hub.url, [['match', privateTopic]]), {
        'last-event-id': first,
      });
      await allowed.waitForEvents(2);
      await denied.waitForEvents(1);
      await anonymous.waitForEvents(1);
      assert.deepEqual(
        allowed.events.map((event) => event.id),
        [secret, last],
      );
      assert.deepEqual(
        denied.events.map((event) => event.id),
        [last],
      );
      assert.deepEqual(
        anonymous.events.map((event) => event.id),
        [last],
      );
      for (const stream of [allowed, denied, anonymous]) stream.close();
    });

    test('a publisher id reused within the history window: the first stays, the cursor resumes after it', async () => {
      const dupTopic = `https://example.com/dup-${backend}`;
      const id = `dup-${backend}`;
      await publishOk(hub.url, { topic: dupTopic, id, data: 'first' });
      const middle = await publishOk(hub.url, { topic: dupTopic, data: 'middle' });
      // Taken for a retry (docs/hub.md, resent publishes): answered with the id, not appended.
      assert.equal(await publishOk(hub.url, { topic: dupTopic, id, data: 'second' }), id);
      const last = await publishOk(hub.url, { topic: dupTopic, data: 'last' });
      const stream = await SseStream.open(subscribeUrl(hub.url, [['match', dupTopic]]), {
        'last-event-id': id,
      });
      await stream.until(() => stream.events.some((event) => event.id === last));
      assert.deepEqual(
        stream.events.map((event) => [event.id, event.data]),
        [
          [middle, 'middle'],
          [last, 'last'],
        ],
      );
      stream.close();
    });
  });
}

describe('history bounds (memory backend)', () => {
  let hub: TestHub;
  before(async () => {
    hub = await startTestHub('memory', {
      MERCURE_ANONYMOUS: '1',
      MERCURE_HISTORY_SIZE: '3',
      MERCURE_HEARTBEAT: '0',
    });
  });
  after(() => hub.close());

  test('history keeps at most MERCURE_HISTORY_SIZE entries; a trimmed cursor means earliest', async () => {
    const topic = 'https://example.com/bounded';
    const ids: string[] = [];
    for (let index = 0; index < 6; index++)
      ids.push(await publishOk(hub.url, { topic, data: String(index) }));
    const stream = await SseStream.open(subscribeUrl(hub.url, [['match', topic]]), {
      'last-event-id': ids[0] as string,
    });
    assert.equal(stream.headers['last-event-id'], 'earliest');
    await stream.waitForEvents(3);
    assert.deepEqual(
      stream.events.map((event) => event.id),
      ids.slice(3),
    );
    stream.close();
  });
});

/*
 * The `topics` field (issue #25, item 4; docs/hub.md, "The topics field"): with
 * MERCURE_TOPICS_FIELD=1, each event of a `match*` subscription carries one `topics:` line per
 * topic the subscriber may see, in publication order, before `data`, live and replayed; a private
 * update shows only the topics the token allows; a subscription of the 0.x `topic` parameter
 * alone gets none; off by default, events are as before.
 */
import assert from 'node:assert/strict';
import { after, describe, test } from 'node:test';
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

const BOOKS = 'https://example.com/books';

after(() => cleanupRedis());

for (const backend of BACKENDS) {
  describe(`the topics field (${backend})`, () => {
    const hubs: TestHub[] = [];
    after(() => Promise.all(hubs.map((hub) => hub.close())));
    const start = async (environment: Record<string, string>) => {
      const hub = await startTestHub(backend, { MERCURE_ANONYMOUS: '1', ...environment });
      hubs.push(hub);
      return hub;
    };

    test('public updates carry every topic, in order, before data; live and replayed', async () => {
      const hub = await start({ MERCURE_TOPICS_FIELD: '1' });
      const url = subscribeUrl(hub.url, [
        ['matchURLPattern', `${BOOKS}/:id`],
        ['match', 'urn:nothing'],
      ]);
      const stream = await SseStream.open(url);
      const id = await publishOk(hub.url, [
        ['topic', `${BOOKS}/1`],
        ['topic', 'https://example.com/authors/7'],
        ['topic', 'urn:isbn:1'],
        ['data', 'line one\nline two'],
      ]);
      const [event] = await stream.waitForEvents(1);
      assert.deepEqual(event, {
        id,
        data: 'line one\nline two',
        topics: [`${BOOKS}/1`, 'https://example.com/authors/7', 'urn:isbn:1'],
      });
      assert.match(
        stream.text,
        new RegExp(
          `id: ${id}\\ntopics: ${BOOKS}/1\\ntopics: https://example.com/authors/7\\ntopics: urn:isbn:1\\ndata: line one\\ndata: line two\\n\\n`,
        ),
      );
      stream.close();
      const replay = await SseStream.open(url, { 'last-event-id': 'earliest' });
      const [replayed] = await replay.waitForEvents(1);
      assert.deepEqual(replayed?.topics, [`${BOOKS}/1`, 'https://example.com/authors/7', 'urn:isbn:1']);
      replay.close();
    });

    test('a private update shows only the topics the token allows', async () => {
      const hub = await start({ MERCURE_TOPICS_FIELD: '1' });
      const token = subscriberToken([{ match: `${BOOKS}/{id}`, matchType: 'URITemplate' }]);
      const stream = await SseStream.open(subscribeUrl(hub.url, [['match', '*']]), {
        authorization: `Bearer ${token}`,
      });
      const id = await publishOk(hub.url, [
        ['topic', 'https://example.com/secret/9'],
        ['topic', `${BOOKS}/2`],
        ['topic', 'https://example.com/other/3'],
        ['data', 'private'],
        ['private', 'on'],
      ]);
      const [event] = await stream.waitForEvents(1);
      assert.deepEqual(event, { id, data: 'private', topics: [`${BOOKS}/2`] });
      // An anonymous subscriber of the same hub gets public updates only, with their topics.
      stream.close();
    });

    test('off by default, and never for a subscription of the 0.x topic parameter alone', async () => {
      const off = await start({});
      const plain = await SseStream.open(subscribeUrl(off.url, [['match', `${BOOKS}/3`]]));
      const id = await publishOk(off.url, { topic: `${BOOKS}/3`, data: 'x' });
      assert.deepEqual((await plain.waitForEvents(1))[0], { id, data: 'x' });
      assert.doesNotMatch(plain.text, /topics:/);
      plain.close();

      const legacy = await start({ MERCURE_TOPICS_FIELD: '1', MERCURE_LEGACY_CLAIMS: '1' });
      const zeroX = await SseStream.open(subscribeUrl(legacy.url, [['topic', `${BOOKS}/{id}`]]));
      const mixed = await SseStream.open(
        subscribeUrl(legacy.url, [
          ['topic', `${BOOKS}/{id}`],
          ['match', 'urn:other'],
        ]),
      );
      const legacyId = await publishOk(legacy.url, { topic: `${BOOKS}/4`, data: 'y' });
      assert.deepEqual((await zeroX.waitForEvents(1))[0], { id: legacyId, data: 'y' });
      assert.deepEqual((await mixed.waitForEvents(1))[0], {
        id: legacyId,
        data: 'y',
        topics: [`${BOOKS}/4`],
      });
      zeroX.close();
      mixed.close();
    });
  });
}

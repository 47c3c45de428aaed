import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { after, before, describe, test } from 'node:test';
import { generateUpdateId } from '../src/publish.js';
import type { Update } from '../src/update.js';
import {
  BACKENDS,
  cleanupRedis,
  publisherToken,
  publishOk,
  SseStream,
  startTestHub,
  subscribeUrl,
  type TestHub,
} from './helpers.js';

after(cleanupRedis);

/**
 * ioredis resends a command whose reply was lost in a reconnect, and a publisher retries a publish
 * answered 503 whose script had in fact run: the same publish can reach the backend twice. An id
 * whose entry is still in history is never appended again, whether the hub generated it or the
 * publisher supplied it (docs/hub.md, resent publishes).
 */
for (const backend of BACKENDS) {
  describe(`a publish sent twice (${backend} backend)`, () => {
    let hub: TestHub;
    const topic = 'https://example.com/resend';

    before(async () => {
      hub = await startTestHub(backend, { MERCURE_ANONYMOUS: '1', MERCURE_HEARTBEAT: '0' });
    });
    after(() => hub.close());

    /** mercure_updates_total and mercure_updates_repeated_total, read from /metrics. */
    async function publishCounters(): Promise<{ updates: number; repeated: number }> {
      const text = await (await fetch(`${hub.origin}/metrics`)).text();
      const value = (name: string) =>
        Number(new RegExp(`^${name} (\\S+)$`, 'm').exec(text)?.[1] ?? Number.NaN);
      return { updates: value('mercure_updates_total'), repeated: value('mercure_updates_repeated_total') };
    }

    const update = (id: string, data: string): Update => ({ id, topics: [topic], data, private: false });

    const cases = [
      { name: 'a hub-generated id', id: () => generateUpdateId(), payloads: ['once', 'once'] },
      {
        name: 'a publisher-supplied id',
        id: () => `https://example.com/updates/${randomUUID()}`,
        payloads: ['once', 'once'],
      },
      {
        // The first stays: a reused id within the history window is taken for a retry.
        name: 'a publisher-supplied id reused with another payload',
        id: () => `https://example.com/updates/${randomUUID()}`,
        payloads: ['once', 'other'],
      },
    ];
    for (const { name, id, payloads } of cases) {
      test(`${name} is appended and delivered once, and every call gets its position`, async () => {
        const { transport } = hub.server.hub;
        const stream = await SseStream.open(subscribeUrl(hub.url, [['match', topic]]));
        const lengthBefore = await transport.historyLength();
        const resentId = id();
        const [firstPayload, secondPayload] = payloads as [string, string];
        const first = await transport.publish(update(resentId, firstPayload));
        const second = await transport.publish(update(resentId, secondPayload));
        // Both in one event loop turn too (one pipeline on Redis): still one entry.
        const [third, fourth] = await Promise.all([
          transport.publish(update(resentId, secondPayload)),
          transport.publish(update(resentId, secondPayload)),
        ]);
        assert.deepEqual(
          [first, second, third, fourth].map(({ position, repeat }) => [position, repeat]),
          [
            [first.position, false],
            [first.position, true],
            [first.position, true],
            [first.position, true],
          ],
        );
        const marker = update(generateUpdateId(), 'marker');
        await transport.publish(marker);

        assert.equal(await transport.historyLength(), lengthBefore + 2);
        assert.deepEqual(await transport.findPosition(resentId), [first.position]);
        await stream.waitForEvents(2);
        assert.deepEqual(
          stream.events.map((event) => [event.id, event.data]),
          [
            [resentId, firstPayload],
            [marker.id, 'marker'],
          ],
        );
        stream.close();
      });
    }

    test('over HTTP, a second publish of a supplied id answers 200 with the id and is delivered once', async () => {
      const stream = await SseStream.open(subscribeUrl(hub.url, [['match', topic]]));
      const id = `https://example.com/updates/${randomUUID()}`;
      const token = publisherToken();
      const before = await publishCounters();
      assert.equal(await publishOk(hub.url, { topic, id, data: 'first' }, token), id);
      assert.equal(await publishOk(hub.url, { topic, id, data: 'retry' }, token), id);
      const marker = await publishOk(hub.url, { topic, data: 'marker' }, token);
      const after = await publishCounters();
      assert.deepEqual(
        [after.updates - before.updates, after.repeated - before.repeated],
        [2, 1],
        'the retry is counted as a repeat, not as another update',
      );
      await stream.waitForEvents(2);
      assert.deepEqual(
        stream.events.map((event) => [event.id, event.data]),
        [
          [id, 'first'],
          [marker, 'marker'],
        ],
      );
      stream.close();
    });

    test('Last-Event-ID naming a re-published id resumes with exactly the later updates, in order', async () => {
      const ids = ['u1', 'u2', 'u3', 'u4'].map((name) => `https://example.com/${randomUUID()}/${name}`);
      const [u1, u2, u3, u4] = ids as [string, string, string, string];
      const token = publisherToken();
      for (const id of [u1, u2, u3, u2, u4]) await publishOk(hub.url, { topic, id, data: id }, token);
      const resumed = await SseStream.open(subscribeUrl(hub.url, [['match', topic]]), {
        'last-event-id': u2,
      });
      assert.equal(resumed.headers['last-event-id'], u2);
      await resumed.until(() => resumed.events.some((event) => event.id === u4));
      assert.deepEqual(
        resumed.events.map((event) => event.id),
        [u3, u4],
      );
      resumed.close();
    });
  });

  describe(`an id whose entry left the history (${backend} backend)`, () => {
    let hub: TestHub;
    const topic = 'https://example.com/resend/trimmed';

    before(async () => {
      hub = await startTestHub(backend, { MERCURE_HISTORY_SIZE: '10', MERCURE_HEARTBEAT: '0' });
    });
    after(() => hub.close());

    test('is appended anew, and Last-Event-ID resolves to the new entry', async () => {
      const { transport } = hub.server.hub;
      const id = `https://example.com/updates/${randomUUID()}`;
      const publishData = (updateId: string, data: string) =>
        transport.publish({ id: updateId, topics: [topic], data, private: false });
      const { position: first } = await publishData(id, 'first');
      // Redis trims whole stream nodes (100 entries by default): push the entry well out.
      for (let index = 0; index < 300; index++) await publishData(generateUpdateId(), `filler ${index}`);
      assert.equal(await transport.findPosition(id), undefined);
      const { position: second, repeat } = await publishData(id, 'second');
      assert.notEqual(second, first);
      assert.equal(repeat, false, 'appended anew');
      assert.deepEqual(await transport.findPosition(id), [second]);
      const copies = (await transport.readHistory(undefined, [second], 1000)).filter(
        (stored) => stored.id === id,
      );
      assert.deepEqual(
        copies.map((stored) => [stored.position, stored.data]),
        [[second, 'second']],
      );
    });
  });
}

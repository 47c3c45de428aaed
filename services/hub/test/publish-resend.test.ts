import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { generateUpdateId } from '../src/publish.js';
import type { Update } from '../src/update.js';
import { BACKENDS, cleanupRedis, SseStream, startTestHub, subscribeUrl, type TestHub } from './helpers.js';

after(cleanupRedis);

/**
 * ioredis resends a command whose reply was lost in a reconnect (autoResendUnfulfilledCommands),
 * so the same publish can reach the backend twice. A hub-generated id is unique, so its second
 * arrival is a resend and must change nothing; publisher-supplied ids may repeat (hub.md, publish).
 */
for (const backend of BACKENDS) {
  describe(`a publish sent twice (${backend} backend)`, () => {
    let hub: TestHub;
    const topic = 'https://example.com/resend';

    before(async () => {
      hub = await startTestHub(backend, { MERCURE_ANONYMOUS: '1', MERCURE_HEARTBEAT: '0' });
    });
    after(() => hub.close());

    const update = (id: string, data: string, idGenerated: boolean): Update => ({
      id,
      topics: [topic],
      data,
      private: false,
      ...(idGenerated ? { idGenerated: true } : {}),
    });

    test('a hub-generated id is appended and delivered once, and both calls get its position', async () => {
      const { transport } = hub.server.hub;
      const stream = await SseStream.open(subscribeUrl(hub.url, [['match', topic]]));
      const lengthBefore = await transport.historyLength();
      const resent = update(generateUpdateId(), 'once', true);
      const first = await transport.publish(resent);
      const second = await transport.publish(resent);
      // Both in one event loop turn too (one pipeline on Redis): still one entry.
      const [third, fourth] = await Promise.all([transport.publish(resent), transport.publish(resent)]);
      assert.deepEqual([second, third, fourth], [first, first, first]);
      const marker = update(generateUpdateId(), 'marker', true);
      await transport.publish(marker);

      assert.equal(await transport.historyLength(), lengthBefore + 2);
      assert.equal(await transport.findPosition(resent.id), first);
      await stream.waitForEvents(2);
      assert.deepEqual(
        stream.events.map((event) => event.id),
        [resent.id, marker.id],
      );
      stream.close();
    });

    test('a publisher-supplied id may repeat: each publish is appended and delivered', async () => {
      const { transport } = hub.server.hub;
      const stream = await SseStream.open(subscribeUrl(hub.url, [['match', topic]]));
      const lengthBefore = await transport.historyLength();
      const supplied = update('https://example.com/updates/supplied', 'again', false);
      const first = await transport.publish(supplied);
      const second = await transport.publish(supplied);
      assert.notEqual(second, first);
      assert.equal(await transport.historyLength(), lengthBefore + 2);
      // Replay resolves the id to its first entry.
      assert.equal(await transport.findPosition(supplied.id), first);
      await stream.waitForEvents(2);
      assert.deepEqual(
        stream.events.map((event) => event.data),
        ['again', 'again'],
      );
      stream.close();
    });
  });
}

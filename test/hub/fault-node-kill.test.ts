import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { stopTestRedis, testRedisEnvironment, uniquePrefix } from '@herald/testkit';
import { type HubProcess, publishOk, SseStream, spawnHub, subscribeUrl } from './support.js';

describe('a hub node killed with SIGKILL', () => {
  let nodeA: HubProcess;
  let nodeB: HubProcess;
  before(async () => {
    const environment = {
      ...(await testRedisEnvironment()),
      MERCURE_REDIS_PREFIX: uniquePrefix('kill'),
      MERCURE_ANONYMOUS: '1',
    };
    [nodeA, nodeB] = await Promise.all([spawnHub(environment), spawnHub(environment)]);
  });
  after(async () => {
    await Promise.all([nodeA.stop(), nodeB.stop()]);
    await stopTestRedis();
  });

  test('its subscribers resume on the other node with Last-Event-ID and miss nothing', async () => {
    const topic = 'https://example.com/kill';
    const subscribers = await Promise.all(
      Array.from({ length: 5 }, () => SseStream.open(subscribeUrl(nodeA.url, [['match', topic]]))),
    );
    const published: string[] = [];
    let publishing = true;
    // The publisher talks to B throughout; A dies mid-stream.
    const publisher = (async () => {
      for (let index = 0; publishing || index < 60; index++) {
        published.push(await publishOk(nodeB.url, { topic, data: String(index) }));
      }
    })();
    await Promise.all(subscribers.map((stream) => stream.waitForEvents(10)));
    nodeA.child.kill('SIGKILL');
    await nodeA.exited;
    const resumed = await Promise.all(
      subscribers.map(async (stream) => {
        await stream.closed();
        const lastEventId = stream.events.at(-1)?.id as string;
        return SseStream.open(subscribeUrl(nodeB.url, [['match', topic]]), { 'last-event-id': lastEventId });
      }),
    );
    publishing = false;
    await publisher;
    const last = published.at(-1) as string;
    for (const [index, stream] of resumed.entries()) {
      assert.equal(stream.status, 200);
      await stream.until(() => stream.events.some((event) => event.id === last));
      const before = subscribers[index]?.events.map((event) => event.id) ?? [];
      const after = stream.events.map((event) => event.id);
      assert.deepEqual([...before, ...after], published, `subscriber ${index}: no gap, no duplicate`);
      stream.close();
    }
  });
});

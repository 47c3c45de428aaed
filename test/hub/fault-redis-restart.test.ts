import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { after, before, describe, test } from 'node:test';
import { RedisServer, uniquePrefix, waitFor } from '@herald/testkit';
import { type HubProcess, publishOk, SseStream, spawnHub, subscriberToken, subscribeUrl } from './support.js';

describe('Redis restart under connected subscribers', () => {
  let redis: RedisServer;
  let nodes: HubProcess[];

  before(async () => {
    redis = await RedisServer.start({ appendOnly: true });
    const environment = {
      REDIS_URL: redis.url,
      MERCURE_REDIS_PREFIX: uniquePrefix('fault'),
      MERCURE_ANONYMOUS: '1',
    };
    nodes = await Promise.all([spawnHub(environment), spawnHub(environment)]);
  });
  after(async () => {
    await Promise.all(nodes.map((node) => node.stop()));
    const keepAlive = setInterval(() => undefined, 1000);
    await redis.destroy();
    clearInterval(keepAlive);
  });

  test('every update in history and every one published after Redis is back reaches each entitled subscriber exactly once', async () => {
    const topic = 'https://example.com/fault/restart';
    const [nodeA, nodeB] = nodes as [HubProcess, HubProcess];
    const entitled = subscriberToken([{ match: topic }]);
    const streams = await Promise.all(
      [nodeA, nodeB]
        .flatMap((node) => [
          {
            node,
            entitled: true,
            open: () =>
              SseStream.open(subscribeUrl(node.url, [['match', topic]]), {
                authorization: `Bearer ${entitled}`,
              }),
          },
          { node, entitled: false, open: () => SseStream.open(subscribeUrl(node.url, [['match', topic]])) },
        ])
        .map(async (spec) => ({ ...spec, stream: await spec.open() })),
    );
    const published: { id: string; private: boolean }[] = [];
    for (let index = 0; index < 10; index++) {
      const isPrivate = index % 2 === 0;
      const node = index % 2 === 0 ? nodeA : nodeB;
      published.push({
        id: await publishOk(node.url, {
          topic,
          data: `before ${index}`,
          ...(isPrivate ? { private: 'on' } : {}),
        }),
        private: isPrivate,
      });
    }

    await redis.restart();
    // Readiness comes back only once each node verified its pub/sub path end to end again.
    await waitFor(async () => (await Promise.all(nodes.map((node) => node.isReady()))).every(Boolean), {
      what: 'both nodes ready after the Redis restart',
      timeoutMs: 20_000,
    });
    for (let index = 0; index < 30; index++) {
      const isPrivate = index % 3 === 0;
      const node = index % 2 === 0 ? nodeB : nodeA;
      published.push({
        id: await publishOk(node.url, {
          topic,
          data: `after ${index}`,
          ...(isPrivate ? { private: 'on' } : {}),
        }),
        private: isPrivate,
      });
    }
    const last = published.at(-1)?.id as string;
    for (const { stream, entitled: isEntitled, node } of streams) {
      assert.equal(stream.status, 200);
      await stream.until(() => stream.events.some((event) => event.id === last));
      const expected = published.filter((update) => isEntitled || !update.private).map((update) => update.id);
      assert.deepEqual(
        stream.events.map((event) => event.id),
        expected,
        `subscriber on port ${node.port} (${isEntitled ? 'entitled' : 'anonymous'}): exactly once, in order`,
      );
      stream.close();
    }
    const metrics = await (await fetch(`${nodeA.origin}/metrics`)).text();
    assert.match(metrics, /mercure_pubsub_reconnects_total(\{[^}]*\})? [1-9]/);
  });

  test('updates published while a node was cut off are filled in from history after it resubscribes', async () => {
    const topic = 'https://example.com/fault/gap';
    const [nodeA, nodeB] = nodes as [HubProcess, HubProcess];
    const onA = await SseStream.open(subscribeUrl(nodeA.url, [['match', topic]]));
    const ids: string[] = [await publishOk(nodeB.url, { topic, data: 'first' })];
    await onA.waitForEvents(1);
    // Kill the pub/sub connections inside Redis: the nodes' subscriber connections drop while
    // Redis stays up, and node B keeps publishing while A reconnects and resubscribes.
    execFileSync('redis-cli', ['-p', String(redis.port), 'CLIENT', 'KILL', 'TYPE', 'pubsub']);
    for (let index = 0; index < 10; index++) {
      ids.push(await publishOk(nodeB.url, { topic, data: `during ${index}` }));
    }
    await onA.until(() => onA.events.length >= ids.length);
    assert.deepEqual(
      onA.events.map((event) => event.id),
      ids,
    );
    onA.close();
  });
});

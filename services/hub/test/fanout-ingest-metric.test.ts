/*
 * `mercure_fanout_messages_received_total` (issue #12, the cluster benchmark's per-node ingest):
 * with MERCURE_PARTITIONS=8 a node counts every update copy it receives from Redis on the
 * partitions it listens to, and nothing else: a node whose subscribers hold exact topics receives
 * only the copies of those topics' partitions, a node with a pattern subscriber every copy, a
 * node without subscribers none (docs/hub.md, which partitions a node listens to).
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { RedisServer, uniquePrefix, waitFor } from '@herald/testkit';
import { Redis } from 'ioredis';
import { partitionOfTopic } from '../src/partitions.js';
import { publishOk, SseStream, startTestHub, subscribeUrl, type TestHub } from './helpers.js';

const PARTITIONS = 8;

/** The first topic of the family `https://example.com/ingest/<n>` in each of two partitions. */
function topicsInTwoPartitions(): [string, string] {
  const first = 'https://example.com/ingest/0';
  for (let index = 1; ; index++) {
    const topic = `https://example.com/ingest/${index}`;
    if (partitionOfTopic(topic, PARTITIONS) !== partitionOfTopic(first, PARTITIONS)) return [first, topic];
  }
}

async function received(hub: TestHub): Promise<number> {
  const text = await (await fetch(`${hub.origin}/metrics`)).text();
  const match = /^mercure_fanout_messages_received_total(?:\{[^}]*\})? (\d+)$/m.exec(text);
  assert.ok(match, 'the metric is exported');
  return Number(match[1]);
}

describe('fan-out ingest metric (redis, MERCURE_PARTITIONS=8)', () => {
  const [exactTopic, otherTopic] = topicsInTwoPartitions();
  const prefix = uniquePrefix('hub-ingest');
  const channel = (topic: string) => {
    const partition = partitionOfTopic(topic, PARTITIONS);
    return `${prefix}${partition === 0 ? '{hub}' : `{hub:${partition}}`}:updates`;
  };
  // A private standalone server: the test reads PUBSUB NUMSUB, which on a Cluster is per shard.
  let redis: RedisServer;
  let admin: Redis;
  let exactNode: TestHub;
  let patternNode: TestHub;
  let idleNode: TestHub;

  before(async () => {
    redis = await RedisServer.start();
    admin = new Redis(redis.url);
    const environment = {
      REDIS_URL: redis.url,
      MERCURE_REDIS_PREFIX: prefix,
      MERCURE_PARTITIONS: String(PARTITIONS),
      MERCURE_ANONYMOUS: '1',
    };
    exactNode = await startTestHub('redis', environment);
    patternNode = await startTestHub('redis', environment);
    idleNode = await startTestHub('redis', environment);
  });
  after(async () => {
    await Promise.all([exactNode.close(), patternNode.close(), idleNode.close()]);
    admin.disconnect();
    await redis.destroy();
  });

  test('a node counts the copies of the partitions it listens to', async () => {
    const exact = await SseStream.open(subscribeUrl(exactNode.url, [['match', exactTopic]]));
    const pattern = await SseStream.open(
      subscribeUrl(patternNode.url, [['matchURITemplate', 'https://example.com/ingest/{id}']]),
    );
    // Both partitions subscribed before publishing: an update published while a node joins a
    // partition may reach it from history instead of its channel (docs/hub.md, joining a partition).
    await waitFor(
      async () => {
        const counts = (await admin.pubsub('NUMSUB', channel(exactTopic), channel(otherTopic))) as unknown[];
        return counts[1] === 2 && counts[3] === 1;
      },
      { what: 'the exact node on one partition, the pattern node on both' },
    );
    // 5 updates on the exact topic, 7 on the other, 2 on both (two copies each, one per partition).
    const shapes = [
      ...Array.from({ length: 5 }, () => [exactTopic]),
      ...Array.from({ length: 7 }, () => [otherTopic]),
      ...Array.from({ length: 2 }, () => [exactTopic, otherTopic]),
    ];
    for (const [index, shape] of shapes.entries())
      await publishOk(idleNode.url, [
        ...shape.map((topic): [string, string] => ['topic', topic]),
        ['data', String(index)],
      ]);
    await exact.waitForEvents(5 + 2);
    await pattern.waitForEvents(shapes.length);
    // Counted before dispatch: every copy a subscriber got was counted, and no copy of a
    // partition the node does not listen to ever reaches it.
    assert.equal(await received(exactNode), 5 + 2);
    await waitFor(async () => (await received(patternNode)) === 5 + 7 + 2 * 2, {
      what: 'the pattern node counting every copy',
    });
    assert.equal(await received(patternNode), 5 + 7 + 2 * 2);
    assert.equal(await received(idleNode), 0);
    exact.close();
    pattern.close();
  });
});

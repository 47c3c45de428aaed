/*
 * Topic partitions on Redis (issue #12, item 3; docs/hub.md, "Redis topologies", "Topic
 * partitions"), two hub nodes with MERCURE_PARTITIONS=8 on a private Redis of each topology
 * (standalone, Sentinel, 3-primary Cluster: partitions spread over the shards):
 * - a node listens only to the partitions its exact-topic subscribers need, to all of them while it
 *   has a pattern subscriber (PUBSUB NUMSUB on the partitions' channels; on Cluster PUBSUB
 *   SHARDNUMSUB on each channel's shard: the hub SSUBSCRIBEs);
 * - every subscriber gets each update once, and the updates of a topic in its partition's order;
 * - a resume with Last-Event-ID across partitions misses nothing, and sends again only updates
 *   published within RESUME_WINDOW before the named one (never that one).
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { uniquePrefix, waitFor } from '@herald/testkit';
import { partitionOfTopic, RESUME_WINDOW } from '../src/partitions.js';
import { publishOk, SseStream, startTestHub, subscribeUrl, type TestHub } from './helpers.js';
import { type PrivateRedis, startPrivateRedis, TOPOLOGIES } from './topologies.js';

const PARTITIONS = 8;

/** One topic per partition (index = partition). */
function topicPerPartition(): string[] {
  const topics: (string | undefined)[] = Array.from({ length: PARTITIONS }, () => undefined);
  for (let index = 0; topics.includes(undefined); index++) {
    const topic = `https://example.com/partitioned/${index}`;
    topics[partitionOfTopic(topic, PARTITIONS)] ??= topic;
  }
  return topics as string[];
}

function positionMs(position: string): number {
  return Number(position.slice(0, position.indexOf('-')));
}

for (const topology of TOPOLOGIES)
  describe(`topic partitions (redis ${topology}, MERCURE_PARTITIONS=8)`, () => {
    const prefix = uniquePrefix('hub-partitions');
    const topics = topicPerPartition();
    let redis: PrivateRedis;
    let nodeA: TestHub;
    let nodeB: TestHub;

    const channel = (partition: number) =>
      `${prefix}${partition === 0 ? '{hub}' : `{hub:${partition}}`}:updates`;
    const history = (partition: number) =>
      `${prefix}${partition === 0 ? '{hub}' : `{hub:${partition}}`}:history`;

    /** Subscribers per partition channel (one per node connection). */
    function channelSubscribers(): Promise<number[]> {
      return redis.channelSubscribers(topics.map((_, partition) => channel(partition)));
    }

    /** Update ids of a partition's history, in stream order, with their positions. */
    async function partitionHistory(partition: number): Promise<{ id: string; position: string }[]> {
      const entries = (await redis.admin.xrange(history(partition), '-', '+')) as [string, string[]][];
      return entries.map(([position, fields]) => ({
        id: (JSON.parse(fields[fields.indexOf('u') + 1] as string) as [string])[0],
        position,
      }));
    }

    before(async () => {
      redis = await startPrivateRedis(topology);
      const environment = {
        ...redis.environment,
        MERCURE_REDIS_PREFIX: prefix,
        MERCURE_PARTITIONS: String(PARTITIONS),
        MERCURE_ANONYMOUS: '1',
      };
      nodeA = await startTestHub('redis', environment);
      nodeB = await startTestHub('redis', environment);
    });
    after(async () => {
      await nodeA.close();
      await nodeB.close();
      await redis.stop();
    });

    test('a node listens to the partitions of its exact topics, to all with a pattern subscriber', async () => {
      const none = topics.map(() => 0);
      await waitFor(async () => (await channelSubscribers()).every((count) => count === 0), {
        what: 'no node listening to any partition',
      });
      const exact = await SseStream.open(
        subscribeUrl(nodeA.url, [
          ['match', topics[3] as string],
          ['match', topics[5] as string],
        ]),
      );
      const onlyThreeAndFive = none.map((_, partition) => (partition === 3 || partition === 5 ? 1 : 0));
      await waitFor(async () => (await channelSubscribers()).join() === onlyThreeAndFive.join(), {
        what: 'node A on partitions 3 and 5 only',
      });
      const pattern = await SseStream.open(
        subscribeUrl(nodeA.url, [['matchURITemplate', 'https://example.com/partitioned/{id}']]),
      );
      await waitFor(async () => (await channelSubscribers()).every((count) => count === 1), {
        what: 'node A on every partition',
      });
      pattern.close();
      await waitFor(async () => (await channelSubscribers()).join() === onlyThreeAndFive.join(), {
        what: 'node A back on partitions 3 and 5 only',
      });
      exact.close();
      await waitFor(async () => (await channelSubscribers()).join() === none.join(), {
        what: 'node A on no partition',
      });
    });

    test('each update once per subscriber, a topic in its partition order', async () => {
      const [t1, t2] = [topics[1] as string, topics[6] as string];
      const single = await SseStream.open(subscribeUrl(nodeB.url, [['match', t1]]));
      const both = await SseStream.open(
        subscribeUrl(nodeB.url, [
          ['match', t1],
          ['match', t2],
        ]),
      );
      const everything = await SseStream.open(
        subscribeUrl(nodeB.url, [['matchURITemplate', 'https://example.com/partitioned/{id}']]),
      );
      // Concurrent publishes from both nodes: single-topic updates on t1, t2, another partition, and
      // updates on several partitions at once.
      const shapes = [[t1], [t2], [topics[4] as string], [t1, t2], [t2, t1, topics[4] as string]];
      const published: { id: string; topics: string[] }[] = [];
      for (let round = 0; round < 10; round++) {
        const batch = shapes.map((shape, index) => ({
          shape,
          node: (round + index) % 2 === 0 ? nodeA : nodeB,
        }));
        const ids = await Promise.all(
          batch.map(({ shape, node }, index) =>
            publishOk(node.url, [
              ...shape.map((topic): [string, string] => ['topic', topic]),
              ['data', `${round}:${index}`],
            ]),
          ),
        );
        for (const [index, id] of ids.entries()) {
          published.push({ id, topics: (batch[index] as { shape: string[] }).shape });
        }
      }
      const expected = (matches: (topic: string) => boolean) =>
        published.filter((update) => update.topics.some(matches)).map((update) => update.id);
      const forSingle = expected((topic) => topic === t1);
      const forBoth = expected((topic) => topic === t1 || topic === t2);
      await single.until(() => single.events.length >= forSingle.length);
      await both.until(() => both.events.length >= forBoth.length);
      await everything.until(() => everything.events.length >= published.length);

      const received = (stream: SseStream) => stream.events.map((event) => event.id as string);
      // Once each: as many events as updates, every update among them.
      assert.deepEqual([...received(single)].sort(), [...forSingle].sort());
      assert.deepEqual([...received(both)].sort(), [...forBoth].sort());
      assert.deepEqual([...received(everything)].sort(), published.map((update) => update.id).sort());

      // A subscriber takes each update from the lowest partition among the topics it matches, in
      // that partition's stream order.
      const topicsOf = new Map(published.map((update) => [update.id, update.topics]));
      for (const [stream, matches] of [
        [single, (topic: string) => topic === t1],
        [both, (topic: string) => topic === t1 || topic === t2],
        [everything, () => true],
      ] as const) {
        for (let partition = 0; partition < PARTITIONS; partition++) {
          const deliveringHere = (id: string) => {
            const matched = (topicsOf.get(id) ?? []).filter(matches);
            return Math.min(...matched.map((topic) => partitionOfTopic(topic, PARTITIONS))) === partition;
          };
          const streamOrder = (await partitionHistory(partition))
            .map((entry) => entry.id)
            .filter((id) => topicsOf.has(id) && deliveringHere(id));
          assert.deepEqual(received(stream).filter(deliveringHere), streamOrder, `partition ${partition}`);
        }
      }
      for (const stream of [single, both, everything]) stream.close();
    });

    test('Last-Event-ID across partitions: nothing missed, repeats only within the resume window', async () => {
      const subscribed = [topics[0] as string, topics[2] as string, topics[7] as string];
      const query = subscribed.map((topic): [string, string] => ['match', topic]);
      const first = await SseStream.open(subscribeUrl(nodeA.url, query));
      const publishRound = async (round: string) => {
        const ids: string[] = [];
        for (const [index, topic] of subscribed.entries()) {
          ids.push(await publishOk(nodeB.url, { topic, data: `${round}:${index}` }));
        }
        // And one on two of them at once.
        ids.push(
          await publishOk(nodeB.url, [
            ['topic', subscribed[0] as string],
            ['topic', subscribed[2] as string],
            ['data', `${round}:both`],
          ]),
        );
        return ids;
      };
      const early = await publishRound('early');
      await first.until(() => first.events.length >= early.length);
      // Redis time moves past the window, so these are no longer repeated on a resume.
      const [seconds] = await redis.admin.time();
      const earlyDone = Number(seconds) * 1000;
      await waitFor(
        async () => Number((await redis.admin.time())[0]) * 1000 > earlyDone + RESUME_WINDOW + 1000,
        {
          intervalMs: 50,
          what: 'Redis time past the resume window',
        },
      );
      const recent = await publishRound('recent');
      await first.until(() => first.events.length >= early.length + recent.length);
      first.close();
      const lastSeen = first.events.at(-1)?.id as string;
      const whileAway = await publishRound('away');

      const resumed = await SseStream.open(subscribeUrl(nodeB.url, query), { 'last-event-id': lastSeen });
      assert.equal(resumed.headers['last-event-id'], lastSeen);
      await resumed.until(() => whileAway.every((id) => resumed.events.some((event) => event.id === id)));
      const again = resumed.events.map((event) => event.id as string);
      assert.ok(!again.includes(lastSeen), 'the Last-Event-ID itself is not sent again');
      for (const id of early) assert.ok(!again.includes(id), `${id} was published long before: not repeated`);
      // Every update is delivered, and each at most once after the resume.
      assert.equal(new Set(again).size, again.length, 'no update twice within the resumed stream');
      const union = new Set([...first.events.map((event) => event.id as string), ...again]);
      for (const id of [...early, ...recent, ...whileAway]) assert.ok(union.has(id), `${id} missed`);
      // Repeats are updates published at most RESUME_WINDOW before the Last-Event-ID.
      const positions = new Map<string, number>();
      for (let partition = 0; partition < PARTITIONS; partition++) {
        for (const entry of await partitionHistory(partition)) {
          const ms = positionMs(entry.position);
          positions.set(entry.id, Math.min(ms, positions.get(entry.id) ?? ms));
        }
      }
      const lastSeenMs = positions.get(lastSeen) as number;
      for (const id of again.filter((id) => recent.includes(id))) {
        assert.ok(
          (positions.get(id) as number) >= lastSeenMs - RESUME_WINDOW,
          `${id} repeated from outside the window`,
        );
      }
      resumed.close();
    });
  });

/*
 * A publish half applied, then retried (docs/hub.md, "Idempotence with k copies"): an update whose
 * topics fall in two partitions on two Redis Cluster shards, one shard paused (SIGSTOP) past the
 * publish deadline. The copy on the live shard is written and delivered; the other is refused by
 * Redis at the deadline (DEADLINE, nothing written) once the shard resumes; the publisher gets a
 * 503. Its retry with the same id adds only the missing copy: one copy per partition, and every
 * subscriber gets the update once.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { keySlot, RedisCluster, uniquePrefix, waitFor } from '@herald/testkit';
import { Cluster, Redis } from 'ioredis';
import { partitionOfTopic } from '../src/partitions.js';
import { publish, publisherToken, SseStream, startTestHub, subscribeUrl, type TestHub } from './helpers.js';

const PARTITIONS = 8;

describe('a publish half applied across shards, then retried (redis cluster, MERCURE_PARTITIONS=8)', () => {
  const prefix = uniquePrefix('hub-partial');
  let cluster: RedisCluster;
  let admin: Cluster;
  let hub: TestHub;

  const tag = (partition: number) => (partition === 0 ? '{hub}' : `{hub:${partition}}`);
  const history = (partition: number) => `${prefix}${tag(partition)}:history`;

  before(async () => {
    // No replicas and a node timeout far above the pause: the paused primary stays the primary,
    // so its copy is refused by the deadline, not by a failover.
    cluster = await RedisCluster.start({ primaries: 3, replicasPerPrimary: 0, nodeTimeoutMs: 60_000 });
    admin = new Cluster(
      cluster.nodes.map((node) => ({ host: '127.0.0.1', port: Number(node.split(':')[1]) })),
    );
    hub = await startTestHub('redis', {
      REDIS_CLUSTER_NODES: cluster.nodes.join(','),
      MERCURE_REDIS_PREFIX: prefix,
      MERCURE_PARTITIONS: String(PARTITIONS),
      MERCURE_ANONYMOUS: '1',
      MERCURE_HEARTBEAT: '0',
    });
  });
  after(async () => {
    await hub?.close();
    admin?.disconnect();
    await cluster?.stop();
  });

  /** Copies of an update id in a partition's history. */
  async function copies(partition: number, id: string): Promise<number> {
    const entries = (await admin.xrange(history(partition), '-', '+')) as [string, string[]][];
    return entries.filter(([, fields]) => (JSON.parse(fields[1] as string) as [string])[0] === id).length;
  }

  test('the retry with the same id adds only the missing copy; each subscriber gets the update once', async () => {
    // Two topics in two partitions whose slots live on two different primaries.
    const live = 'https://example.com/partial/live';
    const livePartition = partitionOfTopic(live, PARTITIONS);
    const livePrimary = await cluster.primaryForKey(history(livePartition));
    let paused = '';
    let pausedPartition = -1;
    for (let index = 0; pausedPartition === -1; index++) {
      const topic = `https://example.com/partial/${index}`;
      const partition = partitionOfTopic(topic, PARTITIONS);
      if ((await cluster.primaryForKey(history(partition))) !== livePrimary) {
        [paused, pausedPartition] = [topic, partition];
      }
    }
    assert.notEqual(keySlot(history(livePartition)), keySlot(history(pausedPartition)));

    const onLive = await SseStream.open(subscribeUrl(hub.url, [['match', live]]));
    const onPaused = await SseStream.open(subscribeUrl(hub.url, [['match', paused]]));
    const onBoth = await SseStream.open(
      subscribeUrl(hub.url, [
        ['match', live],
        ['match', paused],
      ]),
    );
    const id = 'urn:partial:1';
    const fields: [string, string][] = [
      ['id', id],
      ['topic', live],
      ['topic', paused],
      ['data', 'half'],
    ];
    const token = publisherToken();

    const pausedPrimary = await cluster.primaryForKey(history(pausedPartition));
    await cluster.kill(pausedPrimary, 'SIGSTOP');
    let first: Awaited<ReturnType<typeof publish>>;
    try {
      first = await publish(hub.url, fields, { token });
      // The live shard's copy is written and delivered meanwhile.
      await onLive.until(() => onLive.events.length === 1);
    } finally {
      await cluster.kill(pausedPrimary, 'SIGCONT');
    }
    assert.equal(first.status, 503, 'the copy on the paused shard did not answer in time');
    // The paused shard runs the stalled script now and refuses it (DEADLINE): nothing written.
    const shard = new Redis(pausedPrimary, '127.0.0.1');
    try {
      await waitFor(async () => /errorstat_DEADLINE:count=1\b/.test(await shard.info('errorstats')), {
        what: 'the paused shard to refuse the stalled copy with DEADLINE',
      });
    } finally {
      shard.disconnect();
    }
    assert.equal(await copies(livePartition, id), 1, 'the live copy was written');
    assert.equal(await copies(pausedPartition, id), 0, 'the late copy was refused at the deadline');
    await waitFor(async () => (await fetch(`${hub.origin}/readyz`)).status === 200, {
      what: 'the node to verify its pub/sub path again',
      timeoutMs: 15_000,
    });

    const retry = await publish(hub.url, fields, { token });
    assert.equal(retry.status, 200);
    assert.equal(retry.body, id);
    assert.equal(await copies(livePartition, id), 1, 'the live copy is not written twice');
    assert.equal(await copies(pausedPartition, id), 1, 'the missing copy is added');

    await onPaused.until(() => onPaused.events.length === 1);
    await onBoth.until(() => onBoth.events.length === 1);
    // A marker published after the retry, on both topics: once it arrived, anything the retry
    // could have delivered again would have arrived before it (per-partition order).
    const marker = await publish(
      hub.url,
      [
        ['topic', live],
        ['topic', paused],
        ['data', 'marker'],
      ],
      { token },
    );
    assert.equal(marker.status, 200);
    for (const stream of [onLive, onPaused, onBoth]) {
      await stream.until(() => stream.events.some((event) => event.id === marker.body));
      assert.deepEqual(
        stream.events.map((event) => event.id),
        [id, marker.body],
        'the update once, then the marker',
      );
      stream.close();
    }
  });
});

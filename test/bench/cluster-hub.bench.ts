/*
 * The hub on a 3-primary Redis Cluster with MERCURE_PARTITIONS=1, 8 and 16 (issue #12, acceptance
 * "benchmarks"; docs/benchmarks.md, "Redis Cluster"), measured in the same run. Run after
 * `npm run build`:
 *
 *   node --import tsx test/bench/cluster-hub.bench.ts
 *
 * Two hub nodes (services/hub/dist/main.js). Node A holds subscribers on a few exact topics
 * (A_TOPICS, one connection each); node B one subscriber on every other topic, exact matches
 * too. UPDATES single-topic updates go round the TOPICS topics, published by the hub's own
 * RedisTransport in this process (the publish script, pipelined as a node does; no HTTP, so the
 * nodes' CPU goes to receiving). Printed per N:
 * - each node's ingest: update messages it received from Redis
 *   (`mercure_fanout_messages_received_total` deltas), against the total traffic (updates
 *   published) and against what its partitions carry (the updates whose topic's partition the node
 *   listens to; with N=1 every node listens to everything);
 * - per shard: commands/s, script calls/s and CPU (INFO deltas, redis-shards.ts) and the partitions
 *   whose slot it owns.
 * The Cluster has no replicas (they would only compete for the same 2 cores); `BENCH_UPDATES`
 * overrides the update count.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { createMetrics } from '@herald/metrics';
import { keySlot, RedisCluster, uniquePrefix, waitFor } from '@herald/testkit';
import { Redis } from 'ioredis';
import { partitionOfTopic } from '../../services/hub/src/partitions.js';
import { generateUpdateId } from '../../services/hub/src/publish.js';
import { RedisTransport } from '../../services/hub/src/transport-redis.js';
import { type HubProcess, SseStream, spawnHub, subscribeUrl } from '../hub/support.js';
import { formatCount, formatPercent, printTable, ShardMeter, spread } from './redis-shards.js';

const UPDATES = Number(process.env.BENCH_UPDATES ?? 20_000);
const TOPICS = 64;
const A_TOPICS = 2;
const PUBLISH_CONCURRENCY = 64;
/**
 * N=16 beside the asked-for 1 and 8: on a Cluster split in three equal slot ranges (what
 * `redis-cli --cluster create` makes) the slots of `{hub}`…`{hub:7}` fall 2/2/4 over the shards,
 * those of `{hub}`…`{hub:15}` 5/5/6.
 */
const PARTITION_COUNTS = [1, 8, 16] as const;
const topic = (index: number) => `https://example.com/bench/${index}`;

/** A's topics: the first A_TOPICS topics that fall in distinct partitions when N=8. */
function topicsOfA(): string[] {
  const chosen: string[] = [];
  for (let index = 0; chosen.length < A_TOPICS; index++) {
    const candidate = topic(index);
    const partition = partitionOfTopic(candidate, 8);
    if (!chosen.some((other) => partitionOfTopic(other, 8) === partition)) chosen.push(candidate);
  }
  return chosen;
}

const hashTagOf = (partition: number) => (partition === 0 ? '{hub}' : `{hub:${partition}}`);

async function fanoutReceived(node: HubProcess): Promise<number> {
  const text = await (await fetch(`${node.origin}/metrics`)).text();
  const match = /^mercure_fanout_messages_received_total(?:\{[^}]*\})? (\d+)$/m.exec(text);
  if (!match) throw new Error('mercure_fanout_messages_received_total missing from /metrics');
  return Number(match[1]);
}

/** SHARDNUMSUB of each channel, summed over the primaries (only its slot's owner counts it). */
async function channelSubscribers(
  primaries: readonly Redis[],
  channels: readonly string[],
): Promise<number[]> {
  const counts = channels.map(() => 0);
  for (const primary of primaries) {
    const reply = (await primary.call('PUBSUB', 'SHARDNUMSUB', ...channels)) as (string | number)[];
    for (let index = 0; index < channels.length; index++)
      counts[index] = (counts[index] as number) + Number(reply[index * 2 + 1]);
  }
  return counts;
}

interface NodeIngest {
  readonly received: number;
  /** Updates published on topics whose partition the node listens to. */
  readonly ofItsPartitions: number;
  readonly partitions: readonly number[];
}

interface Result {
  readonly partitions: number;
  readonly updatesPerSecond: number;
  readonly nodeA: NodeIngest;
  readonly nodeB: NodeIngest;
  readonly shards: {
    readonly port: number;
    readonly hubPartitions: readonly number[];
    readonly opsPerSecond: number;
    readonly scriptsPerSecond: number;
    readonly cpuShare: number;
  }[];
}

async function measure(cluster: RedisCluster, partitions: number): Promise<Result> {
  const primaryPorts = (await cluster.primaries()).map((node) => node.port);
  const meter = new ShardMeter(primaryPorts);
  const admins = primaryPorts.map((port) => new Redis(port, '127.0.0.1'));
  const prefix = uniquePrefix(`bench-hub-${partitions}`);
  const environment = {
    REDIS_CLUSTER_NODES: cluster.nodes.join(','),
    MERCURE_REDIS_PREFIX: prefix,
    MERCURE_PARTITIONS: String(partitions),
    MERCURE_ANONYMOUS: '1',
    MERCURE_HEARTBEAT: '0',
    MERCURE_WRITE_TIMEOUT: '0',
  };
  const nodes = await Promise.all([spawnHub(environment), spawnHub(environment)]);
  const [nodeA, nodeB] = nodes as [HubProcess, HubProcess];
  const feeder = new RedisTransport({
    topology: {
      kind: 'cluster',
      nodes: primaryPorts.map((port) => ({ host: '127.0.0.1', port })),
      tls: false,
    },
    prefix,
    historySize: 10_000,
    historyTtl: 0,
    partitions,
    metrics: createMetrics(),
    subscriptions: false,
    subscriptionsLease: 15_000,
  });
  const streams: SseStream[] = [];
  try {
    const aTopics = topicsOfA();
    const bTopics = Array.from({ length: TOPICS }, (_, index) => topic(index)).filter(
      (candidate) => !aTopics.includes(candidate),
    );
    const partitionOf = (candidate: string) => partitionOfTopic(candidate, partitions);
    const partitionsOf = (topics: readonly string[]) =>
      [...new Set(topics.map(partitionOf))].sort((a, b) => a - b);
    const aStreams = await Promise.all(
      aTopics.map((candidate) => SseStream.open(subscribeUrl(nodeA.url, [['match', candidate]]))),
    );
    const bStream = await SseStream.open(
      subscribeUrl(
        nodeB.url,
        bTopics.map((candidate): [string, string] => ['match', candidate]),
      ),
    );
    streams.push(...aStreams, bStream);
    // Every channel subscribed as the rule says before publishing: a copy published while a node
    // joins a partition may reach it from history rather than its channel, and go uncounted.
    const channels = Array.from(
      { length: partitions },
      (_, partition) => `${prefix}${hashTagOf(partition)}:updates`,
    );
    const expected = channels.map((_, partition) =>
      partitions === 1
        ? 2
        : Number(partitionsOf(aTopics).includes(partition)) +
          Number(partitionsOf(bTopics).includes(partition)),
    );
    await waitFor(async () => (await channelSubscribers(admins, channels)).join() === expected.join(), {
      what: `nodes A and B subscribed to their partitions (N=${partitions})`,
      timeoutMs: 20_000,
    });
    await waitFor(async () => !(await feeder.readiness())?.startsWith('Redis connection'), {
      what: 'the feeder connection',
    });

    const publishedPerTopic = new Map<string, number>();
    for (let index = 0; index < UPDATES; index++) {
      const name = topic(index % TOPICS);
      publishedPerTopic.set(name, (publishedPerTopic.get(name) ?? 0) + 1);
    }
    const publishedIn = (listened: readonly number[]) =>
      [...publishedPerTopic].reduce(
        (sum, [name, count]) => sum + (listened.includes(partitionOf(name)) ? count : 0),
        0,
      );
    const aPartitions = partitions === 1 ? [0] : partitionsOf(aTopics);
    const bPartitions = partitions === 1 ? [0] : partitionsOf(bTopics);
    const aExpected = publishedIn(aPartitions);
    const bExpected = publishedIn(bPartitions);
    const aDeliveries = aTopics.reduce((sum, name) => sum + (publishedPerTopic.get(name) ?? 0), 0);
    const bDeliveries = UPDATES - aDeliveries;

    const [aBefore, bBefore] = [await fanoutReceived(nodeA), await fanoutReceived(nodeB)];
    const before = await meter.sample();
    const started = performance.now();
    let next = 0;
    await Promise.all(
      Array.from({ length: PUBLISH_CONCURRENCY }, async () => {
        while (next < UPDATES) {
          const index = next++;
          await feeder.publish({
            id: generateUpdateId(),
            topics: [topic(index % TOPICS)],
            data: String(index),
            private: false,
          });
        }
      }),
    );
    await waitFor(
      () =>
        aStreams.reduce((sum, stream) => sum + stream.events.length, 0) >= aDeliveries &&
        bStream.events.length >= bDeliveries,
      { what: 'every update delivered', timeoutMs: 120_000, intervalMs: 20 },
    );
    const elapsed = (performance.now() - started) / 1000;
    const after = await meter.sample();
    // Copies of partitions nobody on the node needs never arrive; the ones it needs were counted
    // before they were delivered. A moment for a late message, then the counters.
    await sleep(200);
    const [aReceived, bReceived] = [
      (await fanoutReceived(nodeA)) - aBefore,
      (await fanoutReceived(nodeB)) - bBefore,
    ];
    const shardPartitions = new Map<number, number[]>(primaryPorts.map((port) => [port, []]));
    for (let partition = 0; partition < partitions; partition++) {
      const port = await cluster.primaryForSlot(keySlot(hashTagOf(partition)));
      shardPartitions.get(port)?.push(partition);
    }
    return {
      partitions,
      updatesPerSecond: UPDATES / elapsed,
      nodeA: { received: aReceived, ofItsPartitions: aExpected, partitions: aPartitions },
      nodeB: { received: bReceived, ofItsPartitions: bExpected, partitions: bPartitions },
      shards: ShardMeter.loads(before, after).map((load) => ({
        ...load,
        hubPartitions: shardPartitions.get(load.port) ?? [],
      })),
    };
  } finally {
    for (const stream of streams) stream.close();
    await feeder.stop();
    await Promise.all(nodes.map((node) => node.stop()));
    meter.close();
    for (const admin of admins) admin.disconnect();
  }
}

const cluster = await RedisCluster.start({ primaries: 3, replicasPerPrimary: 0 });
const results: Result[] = [];
try {
  for (const partitions of PARTITION_COUNTS) results.push(await measure(cluster, partitions));
} finally {
  await cluster.stop();
}

const share = (part: number) => `${((part / UPDATES) * 100).toFixed(1)} %`;
console.log(
  `\nhub on a 3-primary Cluster: ${UPDATES.toLocaleString('en-US')} single-topic updates over ${TOPICS} topics; ` +
    `node A: ${A_TOPICS} exact topics, node B: exact subscriber on the other ${TOPICS - A_TOPICS}\n`,
);
printTable(
  [
    'N',
    'node',
    'partitions listened to',
    'ingest (messages)',
    'ingest / total',
    'its partitions carry',
    'updates/s',
  ],
  results.flatMap((result) =>
    (['A', 'B'] as const).map((name) => {
      const node = name === 'A' ? result.nodeA : result.nodeB;
      return [
        String(result.partitions),
        name,
        node.partitions.join(','),
        formatCount(node.received),
        share(node.received),
        `${formatCount(node.ofItsPartitions)} (${share(node.ofItsPartitions)})`,
        formatCount(result.updatesPerSecond),
      ];
    }),
  ),
);
console.log('');
printTable(
  ['N', 'shard (port)', 'hub partitions (slot owner)', 'commands/s', 'scripts/s', 'CPU (of a core)'],
  results.flatMap((result) =>
    result.shards.map((shard) => [
      String(result.partitions),
      String(shard.port),
      shard.hubPartitions.join(',') || '-',
      formatCount(shard.opsPerSecond),
      formatCount(shard.scriptsPerSecond),
      `${(shard.cpuShare * 100).toFixed(0)} %`,
    ]),
  ),
);
console.log('');
const baseline = results[0] as Result;
printTable(
  [
    'N',
    'updates/s',
    'node A ingest vs N=1',
    'busiest shard, share of commands',
    'commands/s: max vs mean',
    'commands/s: min vs mean',
  ],
  results.map((result) => {
    const ops = result.shards.map((shard) => shard.opsPerSecond);
    const total = ops.reduce((sum, value) => sum + value, 0);
    const { above, below } = spread(ops);
    return [
      String(result.partitions),
      formatCount(result.updatesPerSecond),
      `${(result.nodeA.received / baseline.nodeA.received).toFixed(3)}x`,
      `${((Math.max(...ops) / total) * 100).toFixed(1)} %`,
      formatPercent(above),
      formatPercent(below),
    ];
  }),
);
process.exit(0);

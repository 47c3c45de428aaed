import { RedisCluster } from './redis-cluster.js';
import { RedisSentinelSet } from './redis-sentinel.js';
import { RedisServer } from './redis-server.js';

let shared: Promise<RedisServer> | undefined;
let sharedSentinels: Promise<RedisSentinelSet> | undefined;
let sharedCluster: Promise<RedisCluster> | undefined;

/**
 * The Redis URL a test should use: `REDIS_URL` when set, else a private redis-server started
 * once per test process on a free port. Isolate tests with `uniquePrefix()`.
 */
export async function testRedisUrl(): Promise<string> {
  const fromEnvironment = process.env.REDIS_URL;
  if (fromEnvironment) return fromEnvironment;
  shared ??= RedisServer.start();
  return (await shared).url;
}

/** The variables that choose a Redis topology (docs/contracts.md, "Redis topology"). */
export const REDIS_TOPOLOGY_VARIABLES = ['REDIS_URL', 'REDIS_SENTINELS', 'REDIS_CLUSTER_NODES'] as const;

export type TestTopology = 'standalone' | 'sentinel' | 'cluster';

/** `HERALD_TEST_TOPOLOGY` (standalone by default): which Redis the service suites run on. */
export function testTopology(): TestTopology {
  const chosen = process.env.HERALD_TEST_TOPOLOGY ?? 'standalone';
  if (chosen !== 'standalone' && chosen !== 'sentinel' && chosen !== 'cluster') {
    throw new Error(
      `HERALD_TEST_TOPOLOGY: expected standalone, sentinel or cluster, got ${JSON.stringify(chosen)}`,
    );
  }
  return chosen;
}

/**
 * The Redis variables a service under test gets (issue #12): `REDIS_URL` (as `testRedisUrl`),
 * or with `HERALD_TEST_TOPOLOGY=sentinel` a private Sentinel set (1 primary, 2 replicas,
 * 3 sentinels), or with `HERALD_TEST_TOPOLOGY=cluster` a private 3-primary Redis Cluster, each
 * started once per test process. Isolate tests with `uniquePrefix()`.
 */
export async function testRedisEnvironment(): Promise<Record<string, string>> {
  switch (testTopology()) {
    case 'standalone':
      return { REDIS_URL: await testRedisUrl() };
    case 'sentinel': {
      sharedSentinels ??= RedisSentinelSet.start();
      const set = await sharedSentinels;
      return { REDIS_SENTINELS: set.sentinels.join(','), REDIS_SENTINEL_MASTER: set.masterName };
    }
    case 'cluster': {
      sharedCluster ??= RedisCluster.start();
      return { REDIS_CLUSTER_NODES: (await sharedCluster).nodes.join(',') };
    }
  }
}

/** Stops the private servers started by testRedisUrl and testRedisEnvironment, if any. Call from an `after` hook. */
export async function stopTestRedis(): Promise<void> {
  const [server, sentinels, cluster] = [shared, sharedSentinels, sharedCluster];
  shared = undefined;
  sharedSentinels = undefined;
  sharedCluster = undefined;
  await (await server)?.destroy();
  await (await sentinels)?.stop();
  await (await cluster)?.stop();
}

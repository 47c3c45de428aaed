import {
  parseRedisOptions,
  type RedisTopology,
  type SentinelTopology,
  type StandaloneTopology,
} from '@herald/redis';

/** How the Redis backend is told where Redis lives: a topology (`redisTopologyFrom`), or a standalone URL. */
export interface RedisLocation {
  readonly topology?: RedisTopology;
  readonly url?: string;
}

/**
 * The topology the broker's Redis connections use. Redis Cluster is refused here until the
 * broker's global keys and its transactions are cluster-safe (issue #12 item 2).
 */
export function brokerRedisTopology(location: RedisLocation): StandaloneTopology | SentinelTopology {
  const topology =
    location.topology ?? (location.url === undefined ? undefined : parseRedisOptions(location.url).topology);
  if (!topology) throw new Error('the broker Redis backend needs a topology or a url');
  if (topology.kind === 'cluster') {
    throw new Error(
      'the broker does not run on Redis Cluster yet (issue #12): use REDIS_URL or REDIS_SENTINELS',
    );
  }
  return topology;
}

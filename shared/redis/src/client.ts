import { Cluster, type Redis } from 'ioredis';

/** A connection of any topology: `Redis` for standalone and Sentinel, `Cluster` for Cluster. */
export type RedisClient = Redis | Cluster;

/** True for a Cluster client: the helpers branch on it so callers need not. */
export function isCluster(client: RedisClient): client is Cluster {
  return client instanceof Cluster;
}

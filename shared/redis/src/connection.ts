import { type RedisOptions as IORedisOptions, Redis } from 'ioredis';
import { applyDeadlines } from './deadline.js';
import { redisTarget } from './outage-log.js';

/**
 * Where Redis lives. Only `standalone` is implemented; the union is the seam where Sentinel
 * (`sentinels` + `name`) and Cluster (`nodes`) are added without changing callers.
 */
export type RedisTopology = { readonly kind: 'standalone'; readonly url: string };

export interface RedisOptions {
  readonly topology: RedisTopology;
  /** A connection name shown by CLIENT LIST (`herald-hub-publisher`), for operators. */
  readonly connectionName?: string;
  /** Fail commands instead of queueing them while disconnected (pub/sub probes want this). */
  readonly failFast?: boolean;
  /** Subscriber connections must not run a READY check that issues INFO in subscriber mode. */
  readonly forSubscriber?: boolean;
  /**
   * Data-plane mode (ms): commands are refused with a `RedisUnavailableError` at once while the
   * connection is lost, and when no reply comes within this many ms; a refused command is never
   * written afterwards (`applyDeadlines`). Not for BullMQ connections (it needs its commands to
   * wait) nor subscribers.
   */
  readonly commandTimeout?: number;
}

/** Options from a `redis://` or `rediss://` URL (database, user, password, TLS from the URL). */
export function parseRedisOptions(url: string, rest: Omit<RedisOptions, 'topology'> = {}): RedisOptions {
  const parsed = new URL(url);
  if (parsed.protocol !== 'redis:' && parsed.protocol !== 'rediss:') {
    throw new Error(`REDIS_URL: expected redis:// or rediss://, got ${parsed.protocol}`);
  }
  return { topology: { kind: 'standalone', url }, ...rest };
}

/**
 * One ioredis connection. Reconnects forever with capped backoff: a node must ride out a Redis
 * restart or failover (hub.md, cluster design), and its readiness probe reports the outage.
 */
export function createRedis(options: RedisOptions): Redis {
  const common: IORedisOptions = {
    ...(options.connectionName ? { connectionName: options.connectionName } : {}),
    retryStrategy: (attempt) => Math.min(50 * 2 ** Math.min(attempt, 10), 2000),
    maxRetriesPerRequest: options.failFast ? 0 : null,
    enableOfflineQueue: !options.failFast,
    enableReadyCheck: !options.forSubscriber,
    // Reconnect on READONLY (a failed-over primary turned replica) so writes find the new primary.
    reconnectOnError: (error) => error.message.startsWith('READONLY'),
  };
  switch (options.topology.kind) {
    case 'standalone': {
      const redis = new Redis(options.topology.url, common);
      if (options.commandTimeout !== undefined) {
        applyDeadlines(redis, options.commandTimeout, redisTarget(options.topology.url));
      }
      return redis;
    }
  }
}

import {
  Cluster,
  type ClusterOptions,
  type RedisOptions as IORedisOptions,
  Redis,
  type SentinelAddress,
} from 'ioredis';
import type { RedisClient } from './client.js';
import { applyDeadlines } from './deadline.js';
import {
  type ClusterTopology,
  checkRedisUrl,
  describeTopology,
  type RedisTopology,
  type SentinelTopology,
  type StandaloneTopology,
} from './topology.js';

export interface RedisOptions<T extends RedisTopology = RedisTopology> {
  readonly topology: T;
  /** A connection name shown by CLIENT LIST (`herald-hub-publisher`), for operators. */
  readonly connectionName?: string;
  /** Fail commands instead of queueing them while disconnected (pub/sub probes want this). */
  readonly failFast?: boolean;
  /**
   * Subscriber connections must not run a READY check that issues INFO in subscriber mode. On
   * Cluster it also turns on ioredis' sharded subscribers: one SSUBSCRIBE connection per shard
   * (`subscribeSharded`).
   */
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
export function parseRedisOptions(
  url: string,
  rest: Omit<RedisOptions, 'topology'> = {},
): RedisOptions<StandaloneTopology> {
  return { topology: { kind: 'standalone', url: checkRedisUrl('REDIS_URL', url) }, ...rest };
}

/** Backoff between reconnect attempts, capped at 2 s: a node rides out any outage length. */
const reconnectDelay = (attempt: number): number => Math.min(50 * 2 ** Math.min(attempt, 10), 2000);

/**
 * One connection to the topology. Reconnects forever with capped backoff: a node must ride out
 * a Redis restart or failover (hub.md, cluster design), and its readiness probe reports the
 * outage.
 */
export function createRedis(options: RedisOptions<StandaloneTopology | SentinelTopology>): Redis;
export function createRedis(options: RedisOptions<ClusterTopology>): Cluster;
export function createRedis(options: RedisOptions): RedisClient;
export function createRedis(options: RedisOptions): RedisClient {
  const client = connect(options);
  if (options.commandTimeout !== undefined) {
    applyDeadlines(client, options.commandTimeout, describeTopology(options.topology));
  }
  return client;
}

function connect(options: RedisOptions): RedisClient {
  const common: IORedisOptions = {
    ...(options.connectionName ? { connectionName: options.connectionName } : {}),
    retryStrategy: reconnectDelay,
    maxRetriesPerRequest: options.failFast ? 0 : null,
    enableOfflineQueue: !options.failFast,
    enableReadyCheck: !options.forSubscriber,
    // Reconnect on READONLY (a failed-over primary turned replica) so writes find the new primary.
    reconnectOnError: (error) => error.message.startsWith('READONLY'),
  };
  const { topology } = options;
  switch (topology.kind) {
    case 'standalone':
      return new Redis(topology.url, common);
    case 'sentinel':
      return rideOutFailovers(
        new Redis({
          ...common,
          sentinels: topology.sentinels.map(({ host, port }): Partial<SentinelAddress> => ({ host, port })),
          name: topology.masterName,
          role: 'master',
          ...(topology.sentinelUsername !== undefined ? { sentinelUsername: topology.sentinelUsername } : {}),
          ...(topology.sentinelPassword !== undefined ? { sentinelPassword: topology.sentinelPassword } : {}),
          ...(topology.username !== undefined ? { username: topology.username } : {}),
          ...(topology.password !== undefined ? { password: topology.password } : {}),
          // Sentinels are asked again on every reconnect, forever (a failover takes seconds).
          sentinelRetryStrategy: reconnectDelay,
          // Subscribes to the sentinels' +switch-master: a failover is followed at once, not
          // when the old primary's socket finally errors.
          failoverDetector: true,
          ...(topology.tls ? { tls: {}, sentinelTLS: {}, enableTLSForSentinelMode: true } : {}),
        }),
      );
    case 'cluster': {
      const clusterOptions: ClusterOptions = {
        redisOptions: {
          ...common,
          ...(topology.username !== undefined ? { username: topology.username } : {}),
          ...(topology.password !== undefined ? { password: topology.password } : {}),
          ...(topology.tls ? { tls: {} } : {}),
        },
        // Every command to the primary of its slot: replicas lag (asynchronous replication) and
        // Herald's reads decide writes (a pop reads what a push wrote).
        scaleReads: 'master',
        clusterRetryStrategy: reconnectDelay,
        enableOfflineQueue: !options.failFast,
        enableReadyCheck: !options.forSubscriber,
        // A failover (node timeout + election) takes seconds: retry a command sent to a lost
        // primary or refused with CLUSTERDOWN for up to ~12 s (64 x 200 ms) before failing it.
        maxRedirections: 64,
        retryDelayOnFailover: 200,
        retryDelayOnClusterDown: 200,
        retryDelayOnTryAgain: 100,
        // With TLS, connect by the host name as given (no lookup to an IP first) so the
        // certificate is checked against that name (ioredis README, ElastiCache with TLS).
        ...(topology.tls ? { dnsLookup: (address, callback) => callback(null, address) } : {}),
        // Sharded pub/sub (SSUBSCRIBE) on the shard that owns each channel's slot, never the
        // classic broadcast PUBLISH that every node of the cluster would carry (issue #12).
        ...(options.forSubscriber ? { shardedSubscribers: true } : {}),
      };
      return new Cluster(
        topology.nodes.map(({ host, port }) => ({ host, port })),
        clusterOptions,
      );
    }
  }
}

/** Delay before a client that ended unasked is started again. */
const RESTART_DELAY_MS = 100;

/** What ioredis' SentinelConnector throws when its connect attempt was cut (ioredis `CONNECTION_CLOSED_ERROR_MSG`). */
const CONNECTION_CLOSED = 'Connection is closed.';

/** The part of ioredis' connector (the private `connector` of a client) wrapped here. */
interface Connector {
  connect(emit: (type: string, error?: unknown) => void): Promise<unknown>;
}

/**
 * ioredis 5 cuts a Sentinel client's reconnect in a failover: its failover detector, on the
 * sentinels' +switch-master, calls the connector's `disconnect()`, which clears its "connecting"
 * flag; a reconnect that is at that moment waiting for a sentinel's answer then fails with
 * "Connection is closed.". ioredis takes that for a close asked by the caller: it rejects every
 * command in its queues with that error (a caller of a queueing client gets a raw "Connection is
 * closed." for a command it asked to wait through the outage, and so does any promise ioredis
 * holds itself, which nobody handles) and goes to status `end`, never to reconnect (a command
 * sent then is refused with the same error). shared/redis/test/sentinel.test.ts reproduces it
 * with a paused sentinel; under CPU load a plain kill -9 of the primary hits it too.
 *
 * So a connect attempt cut while nobody closed the client asks the sentinels again at once (the
 * failover is announced: they name the new primary), its commands still queued. A client that
 * ends without being closed all the same (our reconnect strategy never gives up) is started
 * again. Its duplicates (BullMQ's blocking connection) get the same guards.
 */
function rideOutFailovers(client: Redis): Redis {
  let closing = false;
  const disconnect = client.disconnect.bind(client);
  client.disconnect = (reconnect = false) => {
    if (!reconnect) closing = true;
    disconnect(reconnect);
  };
  const quit = client.quit.bind(client);
  client.quit = ((...args: Parameters<Redis['quit']>) => {
    closing = true;
    return quit(...args);
  }) as Redis['quit'];
  const duplicate = client.duplicate.bind(client);
  client.duplicate = (override) => rideOutFailovers(duplicate(override));
  // The first connect (started by the constructor) runs unwrapped: no failover detector exists
  // before a first connection, so nothing but a close can cut it.
  const connector = (client as unknown as { connector: Connector }).connector;
  const connectOnce = connector.connect.bind(connector);
  connector.connect = async (emit) => {
    for (;;) {
      try {
        return await connectOnce(emit);
      } catch (error) {
        // Each attempt waits on a sentinel's answer first, so this is no busy loop; the detector
        // cuts once per failover.
        if (closing || !(error instanceof Error) || error.message !== CONNECTION_CLOSED) throw error;
      }
    }
  };
  client.on('end', () => {
    if (closing) return;
    setTimeout(() => {
      // connect() reports its failure as an 'error' event too, and retries by itself after.
      if (!closing && client.status === 'end') client.connect().catch(() => undefined);
    }, RESTART_DELAY_MS);
  });
  return client;
}

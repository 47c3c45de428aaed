/*
 * A private Redis of each topology for the hub's topology tests (issue #12, items 3-5): one
 * standalone server, a Sentinel set (1 primary, 2 replicas, 3 sentinels) or a 3-primary Redis
 * Cluster, with what the tests need to look at it: the hub's variables, a client for the test's
 * own reads, subscriber counts of channels on the server that carries them, and kill -9 of the
 * primary that owns a key.
 */
import { createRedis, type RedisClient } from '@herald/redis';
import { RedisCluster, RedisSentinelSet, RedisServer } from '@herald/testkit';
import { Redis } from 'ioredis';

export const TOPOLOGIES = ['standalone', 'sentinel', 'cluster'] as const;
export type Topology = (typeof TOPOLOGIES)[number];

export interface PrivateRedis {
  readonly topology: Topology;
  /** The hub's Redis variables (REDIS_URL | REDIS_SENTINELS + REDIS_SENTINEL_MASTER | REDIS_CLUSTER_NODES). */
  readonly environment: Record<string, string>;
  /** The test's own client: the primary (followed across a failover), or a Cluster client. */
  readonly admin: RedisClient;
  /**
   * Subscribers of each channel: PUBSUB NUMSUB on the primary, or on a Cluster PUBSUB
   * SHARDNUMSUB on the primary that owns the channel's slot (sharded pub/sub lives there only).
   */
  channelSubscribers(channels: readonly string[]): Promise<number[]>;
  /**
   * kill -9 of the primary that owns `key` (the one primary on Sentinel), then waits until a
   * replica took over; resolves with the killed and the promoted ports.
   */
  killPrimaryOf(key: string): Promise<{ readonly killed: number; readonly promoted: number }>;
  stop(): Promise<void>;
}

export async function startPrivateRedis(topology: Topology): Promise<PrivateRedis> {
  switch (topology) {
    case 'standalone': {
      const server = await RedisServer.start();
      const admin = new Redis(server.url);
      return {
        topology,
        environment: { REDIS_URL: server.url },
        admin,
        channelSubscribers: (channels) => numsub(admin, channels),
        killPrimaryOf: () => Promise.reject(new Error('standalone Redis has no replica to fail over to')),
        async stop() {
          admin.disconnect();
          await server.destroy();
        },
      };
    }
    case 'sentinel': {
      const set = await RedisSentinelSet.start();
      const sentinels = set.sentinels.join(',');
      const admin = createRedis({
        topology: {
          kind: 'sentinel',
          sentinels: set.sentinels.map(address),
          masterName: set.masterName,
          tls: false,
        },
      });
      // The test's own client rides out the failover it causes: its errors are expected.
      admin.on('error', () => undefined);
      return {
        topology,
        environment: { REDIS_SENTINELS: sentinels, REDIS_SENTINEL_MASTER: set.masterName },
        admin,
        channelSubscribers: (channels) => numsub(admin, channels),
        async killPrimaryOf() {
          const killed = await set.killPrimary();
          return { killed, promoted: await set.waitForFailover(killed) };
        },
        async stop() {
          admin.disconnect();
          await set.stop();
        },
      };
    }
    case 'cluster': {
      const cluster = await RedisCluster.start();
      const admin = createRedis({
        topology: { kind: 'cluster', nodes: cluster.nodes.map(address), tls: false },
      });
      admin.on('error', () => undefined);
      const byPort = new Map<number, Redis>();
      const node = (port: number) => {
        let client = byPort.get(port);
        if (!client) {
          client = new Redis(port, '127.0.0.1');
          client.on('error', () => undefined);
          byPort.set(port, client);
        }
        return client;
      };
      return {
        topology,
        environment: { REDIS_CLUSTER_NODES: cluster.nodes.join(',') },
        admin,
        async channelSubscribers(channels) {
          return Promise.all(
            channels.map(async (channel) => {
              const reply = (await node(await cluster.primaryForKey(channel)).call(
                'PUBSUB',
                'SHARDNUMSUB',
                channel,
              )) as (string | number)[];
              return Number(reply[1]);
            }),
          );
        },
        async killPrimaryOf(key) {
          const killed = await cluster.primaryForKey(key);
          byPort.get(killed)?.disconnect();
          byPort.delete(killed);
          await cluster.kill(killed);
          return { killed, promoted: await cluster.waitForFailover(killed) };
        },
        async stop() {
          admin.disconnect();
          for (const client of byPort.values()) client.disconnect();
          await cluster.stop();
        },
      };
    }
  }
}

function address(hostPort: string): { host: string; port: number } {
  const colon = hostPort.lastIndexOf(':');
  return { host: hostPort.slice(0, colon), port: Number(hostPort.slice(colon + 1)) };
}

async function numsub(redis: RedisClient, channels: readonly string[]): Promise<number[]> {
  const reply = (await redis.call('PUBSUB', 'NUMSUB', ...channels)) as (string | number)[];
  return channels.map((_, index) => Number(reply[index * 2 + 1]));
}

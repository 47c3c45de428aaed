import type { RedisClient } from './client.js';
import { isCluster } from './client.js';

/**
 * Pub/sub that works on every topology without the caller branching (issue #12): on a Cluster,
 * sharded pub/sub (SPUBLISH, SSUBSCRIBE, 'smessage'), carried only by the shard that owns the
 * channel's slot; classic PUBLISH there would be broadcast over the cluster bus to every node.
 * On standalone and Sentinel, classic PUBLISH/SUBSCRIBE: same delivery, and it keeps Redis 6
 * servers working. Every node of one deployment has the same topology, so publishers and
 * subscribers always meet on the same family of commands.
 *
 * A channel that must reach the subscribers of a Lua script's keys shares their hash tag, so a
 * script can SPUBLISH it on a Cluster (Redis checks a script's channels like its keys).
 */
export function publishSharded(
  client: RedisClient,
  channel: string,
  message: string | Buffer,
): Promise<number> {
  return isCluster(client)
    ? (client.spublish(channel, message) as Promise<number>)
    : client.publish(channel, message);
}

/**
 * Subscribes to `channels`. On a Cluster the client must come from
 * `createRedis({ forSubscriber: true })` (sharded subscribers on); each channel is subscribed on
 * its own, since one SSUBSCRIBE may only name channels of one slot. ioredis re-subscribes after
 * a reconnect or a failover on both kinds of client.
 */
export async function subscribeSharded(client: RedisClient, ...channels: readonly string[]): Promise<void> {
  if (isCluster(client)) {
    await Promise.all(channels.map((channel) => client.ssubscribe(channel)));
  } else {
    await client.subscribe(...channels);
  }
}

export async function unsubscribeSharded(client: RedisClient, ...channels: readonly string[]): Promise<void> {
  if (isCluster(client)) {
    await Promise.all(channels.map((channel) => client.sunsubscribe(channel)));
  } else {
    await client.unsubscribe(...channels);
  }
}

/**
 * How many subscribers each of `channels` has (subscribed with `subscribeSharded`): NUMSUB on
 * standalone and Sentinel; on a Cluster SHARDNUMSUB asked of every node and summed (a node
 * that does not own a channel's slot counts 0 for it; a subscriber may sit on a replica).
 */
export async function shardedSubscriberCounts(
  client: RedisClient,
  channels: readonly string[],
): Promise<number[]> {
  const counts = channels.map(() => 0);
  const add = (reply: unknown) => {
    const list = reply as (string | number)[];
    channels.forEach((_, index) => {
      counts[index] = (counts[index] ?? 0) + Number(list[index * 2 + 1] ?? 0);
    });
  };
  if (isCluster(client)) {
    const replies = await Promise.all(
      client.nodes('all').map((node) => node.call('PUBSUB', 'SHARDNUMSUB', ...channels)),
    );
    replies.forEach(add);
  } else {
    add(await client.call('PUBSUB', 'NUMSUB', ...channels));
  }
  return counts;
}

/** Calls `listener` for every message of the channels subscribed with `subscribeSharded`; returns the remover. */
export function onShardedMessage(
  client: RedisClient,
  listener: (channel: string, message: string) => void,
): () => void {
  const event = isCluster(client) ? 'smessage' : 'message';
  client.on(event, listener);
  return () => {
    client.off(event, listener);
  };
}

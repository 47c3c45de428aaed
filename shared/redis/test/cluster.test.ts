/*
 * Herald's connection layer on a real 3-primary Redis Cluster (issue #12): commands and scripts
 * reach the primary of their slot, NOSCRIPT is healed per primary, sharded pub/sub, command
 * deadlines against a paused primary, and a kill -9 failover ridden out by the same client.
 */
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { keySlot, RedisCluster, waitFor } from '@herald/testkit';
import type { Cluster } from 'ioredis';
import {
  createRedis,
  isCluster,
  loadScripts,
  onShardedMessage,
  publishSharded,
  type RedisTopology,
  RedisUnavailableError,
  redisTopologyFromEnv,
  runScript,
  scriptNamed,
  shardedSubscriberCounts,
  subscribeSharded,
} from '../src/index.js';

const scripts = loadScripts(fileURLToPath(new URL('./lua/', import.meta.url)));
let cluster: RedisCluster;
let topology: RedisTopology;
const clients: Cluster[] = [];

before(async () => {
  cluster = await RedisCluster.start();
  topology = redisTopologyFromEnv({ REDIS_CLUSTER_NODES: cluster.nodes.join(',') }) as RedisTopology;
});
after(async () => {
  for (const client of clients) client.disconnect();
  await cluster?.stop();
});

function connect(options: { commandTimeout?: number; forSubscriber?: boolean } = {}): Cluster {
  const client = createRedis({ topology, ...options });
  assert.ok(isCluster(client));
  // Node errors are expected while a primary is paused or dead; each test asserts on replies.
  client.on('error', () => undefined);
  clients.push(client);
  return client;
}

/** One hash tag per primary: `{tag}` keys whose slots are served by three different primaries. */
async function tagPerPrimary(): Promise<Map<number, string>> {
  const tags = new Map<number, string>();
  for (let index = 0; tags.size < 3; index++) {
    const tag = `{q${index}}`;
    const port = await cluster.primaryForKey(tag);
    if (!tags.has(port)) tags.set(port, tag);
  }
  return tags;
}

async function refusal(promise: Promise<unknown>): Promise<RedisUnavailableError> {
  const error = await promise.then(
    () => assert.fail('the command was answered'),
    (error: unknown) => error,
  );
  assert.ok(error instanceof RedisUnavailableError, `expected RedisUnavailableError, got ${String(error)}`);
  return error;
}

test('REDIS_CLUSTER_NODES makes a Cluster client; commands and scripts land on the primary of their slot', async () => {
  const client = connect();
  const increment = scriptNamed(scripts, 'increment');
  for (const [port, tag] of await tagPerPrimary()) {
    assert.equal(await runScript(client, increment, [`${tag}:counter`], [5]), 5);
    assert.equal(await runScript(client, increment, [`${tag}:counter`], [2]), 7);
    const primary = client.nodes('master').find((node) => node.options.port === port);
    assert.ok(primary);
    assert.equal(await primary.get(`${tag}:counter`), '7');
    assert.deepEqual(await primary.script('EXISTS', increment.sha), [1]);
  }
});

test('a primary that lost its script cache (NOSCRIPT) is reloaded by the next call, alone', async () => {
  const client = connect();
  const pair = scriptNamed(scripts, 'pair');
  const tags = [...(await tagPerPrimary())];
  const [flushedPort, flushedTag] = tags[0] as [number, string];
  await runScript(client, pair, [`${flushedTag}:a`, `${flushedTag}:b`], ['1', '2']);
  const flushed = client.nodes('master').find((node) => node.options.port === flushedPort);
  assert.ok(flushed);
  await flushed.script('FLUSH');
  assert.deepEqual(await runScript(client, pair, [`${flushedTag}:a`, `${flushedTag}:b`], ['3', '4']), [
    '3',
    '4',
  ]);
  assert.deepEqual(await flushed.script('EXISTS', pair.sha), [1]);
});

test('a script whose keys are in two slots is refused by Redis (CROSSSLOT), nothing written', async () => {
  const client = connect();
  const pair = scriptNamed(scripts, 'pair');
  const [[, first], [, second]] = [...(await tagPerPrimary())] as [[number, string], [number, string]];
  assert.notEqual(keySlot(first), keySlot(second));
  await assert.rejects(runScript(client, pair, [`${first}:x`, `${second}:x`], ['1', '2']), /CROSSSLOT/);
  assert.equal(await client.exists(`${first}:x`), 0);
  assert.equal(await client.exists(`${second}:x`), 0);
});

test('sharded pub/sub: SSUBSCRIBE per channel slot, SPUBLISH reaches the subscriber', async () => {
  const subscriber = connect({ forSubscriber: true });
  const publisher = connect();
  const channels = [...(await tagPerPrimary()).values()].map((tag) => `${tag}:notify`);
  const received: [string, string][] = [];
  onShardedMessage(subscriber, (channel, message) => received.push([channel, message]));
  await subscribeSharded(subscriber, ...channels);
  for (const channel of channels) {
    // SPUBLISH answers the number of subscribers on the shard that owns the channel.
    assert.equal(await publishSharded(publisher, channel, `to ${channel}`), 1);
  }
  await waitFor(() => received.length === channels.length, { what: 'three sharded messages' });
  assert.deepEqual(received.sort(), channels.map((channel) => [channel, `to ${channel}`]).sort());
});

test('sharded subscriber counts: each channel counted on the shard that owns it, summed over the nodes', async () => {
  const client = connect();
  const tags = [...(await tagPerPrimary()).values()];
  const channels = tags.map((tag) => `${tag}:counted`);
  const both = connect({ forSubscriber: true });
  const first = connect({ forSubscriber: true });
  await subscribeSharded(both, ...channels);
  await subscribeSharded(first, channels[0] as string);
  assert.deepEqual(await shardedSubscriberCounts(client, [...channels, 'nobody:counted']), [2, 1, 1, 0]);
});

test('a command to a paused primary is refused by its deadline; other shards keep answering', async () => {
  const client = connect({ commandTimeout: 300 });
  const tags = [...(await tagPerPrimary())];
  const [pausedPort, pausedTag] = tags[0] as [number, string];
  const [, liveTag] = tags[1] as [number, string];
  await client.set(`${pausedTag}:k`, 'before');
  await cluster.kill(pausedPort, 'SIGSTOP');
  try {
    const pending = client.set(`${pausedTag}:k`, 'during');
    assert.equal(await client.get(`${liveTag}:k`), null, 'another shard answers meanwhile');
    const refused = await refusal(pending);
    assert.equal(refused.reason, 'timeout');
    assert.match(refused.message, /no reply from Redis at cluster 127\.0\.0\.1:\d+.* within 300 ms/);
  } finally {
    await cluster.kill(pausedPort, 'SIGCONT');
  }
  await cluster.waitHealthy();
});

test('kill -9 of a primary: commands for its slots are refused fast, then served by the promoted replica', async () => {
  const client = connect({ commandTimeout: 1000 });
  const tags = [...(await tagPerPrimary())];
  const [deadPort, deadTag] = tags[0] as [number, string];
  const key = `${deadTag}:survivor`;
  await client.set(key, 'before');
  await client.wait(1, 2000);
  await cluster.kill(deadPort);
  await refusal(client.set(key, 'during'));

  await cluster.waitForFailover(deadPort);
  // The same client finds the new primary by itself (MOVED, slot refresh).
  await waitFor(() => client.set(key, 'after').then(() => true), { what: 'a write after the failover' });
  assert.equal(await client.get(key), 'after');
  await cluster.restart(deadPort);
});

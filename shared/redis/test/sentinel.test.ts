/*
 * Herald's connection layer on a real Sentinel set (issue #12): the client finds the primary
 * through the sentinels, scripts and pub/sub work, deadlines hold against a paused primary, and
 * a kill -9 of the primary is ridden out by the same client and subscriber.
 */
import assert from 'node:assert/strict';
import { after, afterEach, before, test } from 'node:test';
import { setTimeout as delay } from 'node:timers/promises';
import { fileURLToPath } from 'node:url';
import { RedisSentinelSet, waitFor } from '@herald/testkit';
import { Redis } from 'ioredis';
import {
  closeRedis,
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
  subscribeSharded,
} from '../src/index.js';

const scripts = loadScripts(fileURLToPath(new URL('./lua/', import.meta.url)));
let set: RedisSentinelSet;
let topology: RedisTopology;
const clients: Redis[] = [];

before(async () => {
  set = await RedisSentinelSet.start();
  topology = redisTopologyFromEnv({
    REDIS_SENTINELS: set.sentinels.join(','),
    REDIS_SENTINEL_MASTER: set.masterName,
  }) as RedisTopology;
});
// Each test's clients are closed when it ends, one after the other and awaited (QUIT lets their
// replies arrive), before the servers stop: none outlives its test to ride later failovers, where
// a rejection of ioredis' own would be reported against a test that already ended.
async function closeClients(): Promise<void> {
  for (const client of clients.splice(0)) await closeRedis(client);
}
afterEach(closeClients);
after(async () => {
  await closeClients();
  await set?.stop();
});

function connect(options: { commandTimeout?: number; forSubscriber?: boolean } = {}): Redis {
  const client = createRedis({ topology, ...options });
  assert.ok(!isCluster(client));
  // Connection errors are expected while the primary is paused or dead.
  client.on('error', () => undefined);
  clients.push(client);
  return client;
}

/**
 * Waits for a fail-fast client's first connection: its deadline also covers a command queued
 * while the client still asks the sentinels and connects, which a loaded machine (CI runs test
 * files side by side on two cores) can stretch past a few hundred ms.
 */
async function connected(client: Redis): Promise<Redis> {
  await waitFor(() => client.status === 'ready', { what: 'the first connection' });
  return client;
}

async function servingPort(client: Redis): Promise<number> {
  return Number(/tcp_port:(\d+)/.exec(await client.info('server'))?.[1]);
}

/** ioredis failover detectors (+switch-master subscriptions) connected to the sentinel on `port`. */
async function detectorsOn(port: number): Promise<number> {
  const sentinel = new Redis({ host: '127.0.0.1', port, lazyConnect: true, retryStrategy: () => null });
  sentinel.on('error', () => undefined);
  try {
    const clients = String(await sentinel.client('LIST'));
    return clients.split('\n').filter((line) => /\bsub=[1-9]/.test(line)).length;
  } finally {
    sentinel.disconnect();
  }
}

test('REDIS_SENTINELS + REDIS_SENTINEL_MASTER reach the primary; scripts and pub/sub work', async () => {
  const client = connect();
  assert.equal(await servingPort(client), await set.primary());
  assert.equal(await runScript(client, scriptNamed(scripts, 'increment'), ['counter'], [3]), 3);

  const subscriber = connect({ forSubscriber: true });
  const received: string[] = [];
  onShardedMessage(subscriber, (_channel, message) => received.push(message));
  await subscribeSharded(subscriber, 'notify');
  assert.equal(await publishSharded(client, 'notify', 'hello'), 1);
  await waitFor(() => received.length === 1, { what: 'the message' });
  assert.deepEqual(received, ['hello']);
});

test('a command to a paused primary is refused by its deadline', async () => {
  const client = await connected(connect({ commandTimeout: 300 }));
  await client.set('paused', 'before');
  const primary = await set.primary();
  await set.kill(primary, 'SIGSTOP');
  try {
    const refused = await client.set('paused', 'during').then(
      () => assert.fail('answered by a paused primary'),
      (error: unknown) => error,
    );
    assert.ok(refused instanceof RedisUnavailableError, String(refused));
    assert.equal(refused.reason, 'timeout');
    assert.match(refused.message, /no reply from Redis at sentinel master herald via 127\.0\.0\.1:\d+/);
  } finally {
    await set.kill(primary, 'SIGCONT');
  }
});

test('a failover announced while the client is reconnecting does not end the client', async () => {
  // ioredis' failover detector (+switch-master) clears the connector's "connecting" flag; a
  // reconnect then waiting on a sentinel's answer fails with "Connection is closed" and ioredis
  // ends the client for good. The client asks the first sentinel of the list first: paused, it
  // holds the reconnect in that wait while the two others fail over and announce it.
  const client = await connected(connect({ commandTimeout: 500 }));
  await client.set('reconnecting', 'before');
  const [asked, witness] = set.sentinels.map((address) => Number(address.split(':')[1])) as [number, number];
  const killed = await set.primary();
  await set.signalSentinel(asked, 'SIGSTOP');
  try {
    await set.kill(killed);
    await waitFor(async () => (await set.primaryAccordingTo(witness)) !== killed, {
      timeoutMs: 30_000,
      intervalMs: 100,
      what: 'the failover, seen by a sentinel that answers',
    });
    // The announcement reaches the client's detector on the sentinels that answer.
    await delay(500);
  } finally {
    await set.signalSentinel(asked, 'SIGCONT');
  }
  await waitFor(() => client.set('reconnecting', 'after').then(() => true), {
    timeoutMs: 20_000,
    intervalMs: 200,
    what: 'a write through the client after the failover',
  });
  assert.equal(client.status, 'ready');
  // Back to a primary with two replicas for the next test.
  await set.restart(killed);
  await set.waitHealthy();
});

test('a failover announced while the client is reconnecting fails no queued command', async () => {
  // The same cut on a queueing client (no commandTimeout: BullMQ's kind, and subscribers): ioredis
  // rejected every command waiting for the reconnect with "Connection is closed." (what made the
  // kill -9 test below flaky under load, where a reconnect sometimes waits on a sentinel's answer
  // just when the failover is announced). A command issued during the outage is answered after it.
  const client = connect();
  const subscriber = connect({ forSubscriber: true });
  const received: string[] = [];
  onShardedMessage(subscriber, (_channel, message) => received.push(message));
  await subscribeSharded(subscriber, 'queued-failover');
  await client.set('queued', 'before');
  await client.wait(2, 2000);
  const [asked, witness] = set.sentinels.map((address) => Number(address.split(':')[1])) as [number, number];
  await waitFor(async () => (await detectorsOn(witness)) === 2, {
    what: 'the failover detectors of the client and the subscriber on a sentinel that answers',
  });
  const killed = await set.primary();
  await set.signalSentinel(asked, 'SIGSTOP');
  let queued: Promise<{ value: string | null } | { error: unknown }>;
  try {
    await set.kill(killed);
    // Issued once the client saw the loss: it waits in the offline queue, not on the dead socket.
    await waitFor(() => client.status !== 'ready' && subscriber.status !== 'ready', {
      intervalMs: 10,
      what: 'the client and the subscriber to see the primary go',
    });
    queued = client.get('queued').then(
      (value) => ({ value }),
      (error: unknown) => ({ error }),
    );
    await waitFor(async () => (await set.primaryAccordingTo(witness)) !== killed, {
      timeoutMs: 30_000,
      intervalMs: 100,
      what: 'the failover, seen by a sentinel that answers',
    });
    // Both detectors heard the announcement and cut the reconnects held by the paused sentinel:
    // a detector that fires closes its sentinel connections, and none is opened again before a
    // reconnect succeeds.
    await waitFor(async () => (await detectorsOn(witness)) === 0, {
      timeoutMs: 30_000,
      intervalMs: 100,
      what: 'the failover detectors to hear the announcement',
    });
  } finally {
    await set.signalSentinel(asked, 'SIGCONT');
  }
  assert.deepEqual(await queued, { value: 'before' });
  assert.notEqual(await servingPort(client), killed);
  await waitFor(
    async () => {
      await publishSharded(client, 'queued-failover', 'ping');
      return received.length > 0;
    },
    { what: 'a message through the new primary', intervalMs: 100 },
  );
  assert.equal(received[0], 'ping');
  // Back to a primary with two replicas for the next test.
  await set.restart(killed);
  await set.waitHealthy();
});

test('kill -9 of the primary: the client and the subscriber follow the promoted replica', async () => {
  const client = connect();
  const subscriber = connect({ forSubscriber: true });
  const received: string[] = [];
  onShardedMessage(subscriber, (_channel, message) => received.push(message));
  await subscribeSharded(subscriber, 'after-failover');
  await client.set('survivor', 'before');
  await client.wait(2, 2000);

  const killed = await set.killPrimary();
  const promoted = await set.waitForFailover(killed);
  // Queued while the primary is away (not fail-fast), answered by the new primary.
  assert.equal(await client.get('survivor'), 'before');
  await client.set('survivor', 'after');
  assert.equal(await servingPort(client), promoted);

  // The subscriber re-subscribed on the new primary by itself.
  await waitFor(
    async () => {
      await publishSharded(client, 'after-failover', 'ping');
      return received.length > 0;
    },
    { what: 'a message through the new primary', intervalMs: 100 },
  );
  assert.equal(received[0], 'ping');
});

/*
 * A broker node of a release before message records reads a record as an entry without fields
 * (its consumer would get an empty message). While one is connected to the same Redis (a
 * rolling update, a rollback), pushes write the five fields every release reads; records again
 * once none has been seen for the quiet time (redis/record-readers.ts). A node of an earlier
 * release is played by a connection subscribed to the control channel only, as such a node's is.
 */
import assert from 'node:assert/strict';
import { after, describe, test } from 'node:test';
import { KeyClock } from '@herald/redis';
import { stopTestRedis, testRedisUrl, uniquePrefix, waitFor } from '@herald/testkit';
import { Redis } from 'ioredis';
import { entryFields } from '../src/redis/message-record.js';
import { RecordReaders } from '../src/redis/record-readers.js';
import { QUEUE_MODE } from '../src/storage.js';
import { RedisStorage } from '../src/storage-redis.js';

after(() => stopTestRedis());

const INTERVAL_MS = 1000;
const QUIET_MS = 5000;
const QUEUE = 'record-readers';

/**
 * A node of this release (its storage on a test clock, ready) beside one of an earlier release:
 * `older`, a connection subscribed to the control channel only, as such a node's is.
 */
async function besideAnOlderNode() {
  const url = await testRedisUrl();
  const prefix = uniquePrefix('record-readers');
  const redis = new Redis(url);
  const older = new Redis(url);
  await older.subscribe(`${prefix}control`);
  const clock = new KeyClock(Date.now());
  const storage = new RedisStorage({
    topology: { kind: 'standalone', url },
    prefix,
    log: { warn: () => undefined, info: () => undefined },
    clock,
    recordReaders: { intervalMs: INTERVAL_MS, quietMs: QUIET_MS },
  });
  await waitFor(async () => (await storage.ready()) === undefined, { what: 'ready' });
  assert.equal(storage.writesRecords, false, 'a node of an earlier release is connected');
  /** The older node leaves: resolves once Redis no longer counts its subscription. */
  const olderLeaves = async (connection: Redis) => {
    connection.disconnect();
    await waitFor(
      async () => ((await redis.call('PUBSUB', 'NUMSUB', `${prefix}control`)) as [string, number])[1] === 1,
      { what: 'the older node gone' },
    );
  };
  return { url, prefix, redis, older, clock, storage, olderLeaves };
}

describe('message records while a node of an earlier release is connected (redis)', () => {
  test('five fields while it is connected, records once it has been gone for the quiet time', async () => {
    const node = await besideAnOlderNode();
    const { url, prefix, redis, clock, storage } = node;
    let older = node.older;
    const stream = `${prefix}{${QUEUE}}:s:Default`;
    let pushed = 0;
    /** Pushes one message; answers the first field of the entry it stored: 'r' for a record. */
    const push = async (): Promise<string> => {
      pushed++;
      await storage.queues.push([
        {
          queue: QUEUE,
          partition: 'Default',
          transactionId: `t${pushed} "quoted"\n`,
          messageId: `m${pushed}`,
          traceId: null,
          data: JSON.stringify({ n: pushed }),
          producerSub: null,
        },
      ]);
      const [entry] = (await redis.xrevrange(stream, '+', '-', 'COUNT', 1)) as [string, string[]][];
      assert.ok(entry);
      assert.equal(entryFields(entry[1]).transactionId, `t${pushed} "quoted"\n`);
      return entry[1][0] as string;
    };
    try {
      assert.equal(await push(), 'm');

      await node.olderLeaves(older);
      await clock.advance(INTERVAL_MS);
      assert.equal(await push(), 'm', 'gone for less than the quiet time: still five fields');
      await clock.advance(QUIET_MS);
      await waitFor(() => storage.writesRecords, { what: 'records again' });
      assert.equal(await push(), 'r');

      older = new Redis(url);
      await older.subscribe(`${prefix}control`);
      await clock.advance(INTERVAL_MS);
      await waitFor(() => !storage.writesRecords, { what: 'five fields again' });
      assert.equal(await push(), 'm');

      const popped = await storage.queues.pop({
        queue: QUEUE,
        partition: undefined,
        group: QUEUE_MODE,
        batch: 10,
        maxPartitions: 1,
        leaseId: 'lease-1',
        subscription: { mode: 'all' },
      });
      assert.deepEqual(
        popped.partitions[0]?.messages.map((message) => [message.id, message.transactionId, message.data]),
        [1, 2, 3, 4].map((n) => [`m${n}`, `t${n} "quoted"\n`, JSON.stringify({ n })]),
        'every entry pops alike, whatever its layout',
      );
    } finally {
      await storage.close();
      older.disconnect();
      redis.disconnect();
    }
  });

  test('an ack batch that releases a lease leaves a field per ack while such a node is connected, one record once none is', async () => {
    const { prefix, redis, older, clock, storage, olderLeaves } = await besideAnOlderNode();
    const queue = 'record-readers-acks';
    let pushed = 0;
    /**
     * Pushes three messages, pops them under `leaseId` and acks them, in one batch (the
     * whole-lease path) or the first alone and then the two that release the lease (the general
     * one), then the same again (a client's resend). Answers what the lease's answers became.
     */
    const cycle = async (leaseId: string, split: boolean) => {
      const transactionIds = [1, 2, 3].map(() => `t${++pushed}`);
      await storage.queues.push(
        transactionIds.map((transactionId) => ({
          queue,
          partition: 'Default',
          transactionId,
          messageId: `m-${transactionId}`,
          traceId: null,
          data: '1',
          producerSub: null,
        })),
      );
      const popped = await storage.queues.pop({
        queue,
        partition: 'Default',
        group: QUEUE_MODE,
        batch: 10,
        maxPartitions: 1,
        leaseId,
        subscription: { mode: 'all' },
      });
      const partitionId = popped.partitions[0]?.partitionId ?? '';
      const batch = transactionIds.map((transactionId) => ({
        transactionId,
        partitionId,
        status: 'completed' as const,
        group: QUEUE_MODE,
        leaseId,
        error: null,
      }));
      const batches = split ? [batch.slice(0, 1), batch.slice(1)] : [batch];
      const first = [];
      for (const each of batches) first.push(...(await storage.queues.ack(each)));
      assert.deepEqual(
        first.map((result) => [result.success, result.repeat]),
        [
          [true, false],
          [true, false],
          [true, false],
        ],
      );
      const answers = await redis.hgetall(`${prefix}{${queue}}:la:${leaseId}`);
      // A client's resend of the batch: answered as a repeat, whatever form the answers took.
      const resent = [];
      for (const each of batches) resent.push(...(await storage.queues.ack(each)));
      assert.deepEqual(
        resent.map((result) => [result.success, result.repeat]),
        [
          [true, true],
          [true, true],
          [true, true],
        ],
      );
      return { answers, transactionIds };
    };
    try {
      // What a node of a release before answer records reads: a field per ack.
      for (const split of [false, true]) {
        const whileOlder = await cycle(`lease-older-${split}`, split);
        assert.deepEqual(
          whileOlder.answers,
          Object.fromEntries(
            whileOlder.transactionIds.map((transactionId) => [`Default\n${transactionId}`, 'done:0']),
          ),
          split ? 'two batches' : 'one batch',
        );
      }

      await olderLeaves(older);
      await clock.advance(INTERVAL_MS);
      await clock.advance(QUIET_MS);
      await waitFor(() => storage.writesRecords, { what: 'records again' });
      const alone = await cycle('lease-alone', false);
      assert.deepEqual(alone.answers, { '*Default': `done:0${JSON.stringify(alone.transactionIds)}` });
      const aloneSplit = await cycle('lease-alone-split', true);
      const [single, ...rest] = aloneSplit.transactionIds;
      assert.deepEqual(aloneSplit.answers, {
        [`Default\n${single}`]: 'done:0',
        '*Default': `done:0${JSON.stringify(rest)}`,
      });
    } finally {
      await storage.close();
      older.disconnect();
      redis.disconnect();
    }
  });

  test('a count without this node in it opens nothing', async () => {
    const url = await testRedisUrl();
    const redis = new Redis(url);
    const subscriber = new Redis(url);
    const control = `${uniquePrefix('record-readers')}control`;
    const readers = new RecordReaders({
      redis,
      control,
      channel: `{${control}}:record-readers`,
      clock: new KeyClock(Date.now()),
      log: { warn: () => undefined, info: () => undefined },
    });
    try {
      // Nobody subscribed, this node included (a Cluster client that has not found its nodes
      // answers the same): no count to go by.
      assert.equal(await readers.check(), false);
      await subscriber.subscribe(readers.channel, control);
      assert.equal(await readers.check(), true);
    } finally {
      readers.stop();
      subscriber.disconnect();
      redis.disconnect();
    }
  });

  test('a node alone writes records from its first push', async () => {
    const url = await testRedisUrl();
    const prefix = uniquePrefix('record-readers');
    const redis = new Redis(url);
    const storage = new RedisStorage({
      topology: { kind: 'standalone', url },
      prefix,
      log: { warn: () => undefined, info: () => undefined },
    });
    try {
      await waitFor(async () => (await storage.ready()) === undefined, { what: 'ready' });
      assert.equal(storage.writesRecords, true);
      await storage.queues.push([
        {
          queue: QUEUE,
          partition: 'Default',
          transactionId: 't',
          messageId: 'm',
          traceId: null,
          data: '1',
          producerSub: null,
        },
      ]);
      const [entry] = (await redis.xrange(`${prefix}{${QUEUE}}:s:Default`, '-', '+')) as [string, string[]][];
      assert.equal(entry?.[1][0], 'r');
    } finally {
      await storage.close();
      redis.disconnect();
    }
  });

  test('Redis refusing the count (an ACL without PUBSUB) is logged once; pushes keep five fields', async () => {
    const url = await testRedisUrl();
    const admin = new Redis(url);
    const user = `herald-nopubsub-${process.pid}-${Date.now()}`;
    await admin.call('ACL', 'SETUSER', user, 'on', '>secret', '~*', '&*', '+@all', '-pubsub');
    const limited = new Redis(url, { username: user, password: 'secret' });
    const warnings: string[] = [];
    const readers = new RecordReaders({
      redis: limited,
      control: 'control',
      channel: '{control}:record-readers',
      clock: new KeyClock(Date.now()),
      log: { warn: (_details, message) => warnings.push(message), info: () => undefined },
    });
    try {
      assert.equal(await readers.check(), false);
      assert.equal(await readers.check(), false);
      assert.equal(warnings.length, 1, warnings.join('\n'));
      assert.match(warnings[0] as string, /^message records: Redis refused to count the broker nodes/);
    } finally {
      limited.disconnect();
      await admin.call('ACL', 'DELUSER', user);
      admin.disconnect();
    }
  });
});

/*
 * An ack batch that completes a whole lease moves the consumer's position to the lease's last
 * message without reading the batch back from the stream (lua/includes/advance-state.lua,
 * advance_whole_lease; issue #14, round 2). That shortcut must leave exactly what the general
 * path leaves: each case acks the same lease once as one whole batch and once split in two
 * (which the shortcut never takes), and compares answers, stored state and the next delivery.
 * Which path ran is read from the commands the scripts sent (MONITOR): the general path reads
 * the stream from the position the batch started at, the shortcut does not.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { RedisMonitor, stopTestRedis, testRedisUrl, uniquePrefix } from '@herald/testkit';
import { Redis } from 'ioredis';
import { entryFields } from '../src/redis/message-record.js';
import type { AckInput, AckStatus } from '../src/storage.js';
import { QUEUE_MODE } from '../src/storage.js';
import { RedisStorage } from '../src/storage-redis.js';

const PARTITION = 'p';
const PUSHED = 12;
const LEASED = 10;
const txn = (n: number) => `t${n}`;

/**
 * The answers recorded under a lease, one per message: a batch that released the lease leaves
 * them as one record per partition (lua/includes/lease-answers.lua), a split batch partly as
 * one field per ack; the answers are what must match.
 */
function answersPerMessage(hash: Record<string, string>): Record<string, string> {
  const answers: Record<string, string> = {};
  for (const [field, value] of Object.entries(hash)) {
    if (!field.startsWith('*')) {
      answers[field] = value;
      continue;
    }
    const at = value.indexOf('[');
    for (const transactionId of JSON.parse(value.slice(at)) as string[]) {
      answers[`${field.slice(1)}\n${transactionId}`] = value.slice(0, at);
    }
  }
  return Object.fromEntries(Object.entries(answers).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)));
}

/** One ack of a step: a message, its status, whether it names the lease (false: no lease check). */
interface Ack {
  message: number;
  status?: AckStatus;
  underLease?: boolean;
}

/** What a case does after the pop: ack batches, or a direct change of the stored state. */
type Step = { acks: Ack[] } | { run: (base: string, partitionId: string) => Promise<unknown> };

after(() => stopTestRedis());

describe('ack of a whole lease (redis)', () => {
  let redis: Redis;
  let monitor: RedisMonitor;
  let storage: RedisStorage;
  const prefix = uniquePrefix('whole-lease');
  let queues = 0;
  let seen: string[][] = [];
  let syncs = 0;
  let waiting: { marker: string; reached: () => void } | undefined;

  before(async () => {
    const url = await testRedisUrl();
    redis = new Redis(url);
    monitor = await RedisMonitor.start(url, (args) => {
      if (waiting && args[0] === 'echo' && args[1] === waiting.marker) waiting.reached();
      else seen.push([...args]);
    });
    storage = new RedisStorage({
      topology: { kind: 'standalone', url },
      prefix,
      log: { warn: () => undefined, info: () => undefined },
    });
  });
  after(async () => {
    await storage.close();
    monitor.stop();
    redis.disconnect();
  });

  /** Waits until MONITOR has shown every command Redis ran before this call. */
  async function sync(): Promise<void> {
    const marker = `${prefix}sync-${++syncs}`;
    const reached = new Promise<void>((resolve) => {
      waiting = { marker, reached: resolve };
    });
    await redis.echo(marker);
    await reached;
  }

  /** Runs an ack batch; `readBack`: it read the stream from the position it started at. */
  async function ackBatch(base: string, acks: AckInput[]) {
    const position = (await redis.hget(`${base}c:${PARTITION}:${QUEUE_MODE}`, 'pos')) ?? '0-0';
    await sync();
    seen = [];
    const results = await storage.queues.ack(acks);
    await sync();
    const readBack = seen.some(
      (args) => args[0] === 'XRANGE' && args[1] === `${base}s:${PARTITION}` && args[2] === `(${position}`,
    );
    return { results, readBack };
  }

  /** A queue with PUSHED messages t0…, the first LEASED of them leased as `lease-1`. */
  async function leasedQueue() {
    const queue = `whole-lease-${++queues}`;
    await storage.catalog.configure(queue, { leaseTime: 60, retryLimit: 3 }, { namespace: '', task: '' });
    await storage.queues.push(
      Array.from({ length: PUSHED }, (_, n) => ({
        queue,
        partition: PARTITION,
        transactionId: txn(n),
        messageId: `m${n}`,
        traceId: null,
        data: '{}',
        producerSub: null,
      })),
    );
    const first = await pop(queue, 'lease-1', LEASED);
    assert.deepEqual(
      first.messages.map((message) => message.transactionId),
      Array.from({ length: LEASED }, (_, n) => txn(n)),
    );
    return { queue, partitionId: first.partitionId, base: `${prefix}{${queue}}:` };
  }

  async function pop(queue: string, leaseId: string, batch: number) {
    const result = await storage.queues.pop({
      queue,
      partition: PARTITION,
      group: QUEUE_MODE,
      batch,
      maxPartitions: 1,
      leaseId,
      subscription: { mode: 'all' },
    });
    const [leased] = result.partitions;
    return leased ?? { partitionId: '', leaseId, messages: [] };
  }

  function ackInputs(partitionId: string, leaseId: string, acks: Ack[]): AckInput[] {
    return acks.map(({ message, status = 'completed', underLease = true }) => ({
      transactionId: txn(message),
      partitionId,
      status,
      group: QUEUE_MODE,
      leaseId: underLease ? leaseId : null,
      error: status === 'completed' ? null : 'boom',
    }));
  }

  /**
   * The consumer state in transaction ids (stream ids and times differ between queues): the
   * position, the lease's fields, resolved-ahead and answered sets, retry counts, recorded
   * answers, counters and the ready and lease indexes.
   */
  async function snapshot(base: string) {
    const idToTxn = new Map<string, string>();
    for (const [id, fields] of await redis.xrange(`${base}s:${PARTITION}`, '-', '+')) {
      idToTxn.set(id, entryFields(fields).transactionId);
    }
    const name = (id: string) => idToTxn.get(id) ?? (id === '0-0' ? id : `gone ${id}`);
    const names = (ids: string[]) => ids.map(name).sort();
    const state = await redis.hgetall(`${base}c:${PARTITION}:${QUEUE_MODE}`);
    const consumer: Record<string, string> = {};
    for (const [field, value] of Object.entries(state)) {
      if (field === 'pos' || field === 'upto') consumer[field] = name(value);
      else if (field === 'exp') consumer[field] = 'set';
      else if (field === 'from') {
        const [lease, position] = value.split(' ') as [string, string];
        consumer[field] = `${lease} ${name(position)}`;
      } else consumer[field] = value;
    }
    const retryCounts: Record<string, string> = {};
    for (const [id, count] of Object.entries(await redis.hgetall(`${base}rc:${PARTITION}:${QUEUE_MODE}`))) {
      retryCounts[name(id)] = count;
    }
    return {
      consumer,
      resolvedAhead: names(await redis.smembers(`${base}a:${PARTITION}:${QUEUE_MODE}`)),
      answered: names(await redis.smembers(`${base}r:${PARTITION}:${QUEUE_MODE}`)),
      retryCounts,
      answers: answersPerMessage(await redis.hgetall(`${base}la:lease-1`)),
      stats: await redis.hgetall(`${base}stats`),
      ready: await redis.zrange(`${base}ready:${QUEUE_MODE}`, 0, -1),
      // Partitions a pop naming none would look at now (a later time: a lease's expiry).
      dueNow: await redis.zrangebyscore(`${base}ready:${QUEUE_MODE}`, '-inf', Date.now()),
      leases: await redis.zrange(`${base}leases`, 0, -1),
    };
  }

  /**
   * Runs `steps` on a fresh leased queue: the answers of every ack, the XRANGE calls of each
   * ack batch, the state after them, then what a pop delivers next (the lease, if still held,
   * delivers nothing) and the state after acking that delivery.
   */
  async function outcome(steps: Step[]) {
    const { queue, partitionId, base } = await leasedQueue();
    const answers: unknown[] = [];
    const reads: boolean[] = [];
    for (const step of steps) {
      if ('run' in step) {
        await step.run(base, partitionId);
        continue;
      }
      const { results, readBack } = await ackBatch(base, ackInputs(partitionId, 'lease-1', step.acks));
      reads.push(readBack);
      for (const r of results)
        answers.push([r.transactionId, r.success, r.error, r.leaseReleased, r.dlq, r.repeat]);
    }
    const state = await snapshot(base);
    const next = await pop(queue, 'lease-2', PUSHED);
    const delivered = next.messages.map((message) => [message.transactionId, message.retryCount]);
    const acked = await ackBatch(base, ackInputs(partitionId, 'lease-2', next.messages.map(numbered)));
    const nextAnswers = acked.results.map((r) => [r.transactionId, r.success, r.leaseReleased]);
    const stateAfterNext = await snapshot(base);
    return { answers, reads, state, delivered, nextAnswers, nextReadBack: acked.readBack, stateAfterNext };
  }

  const numbered = (message: { transactionId: string }): Ack => ({
    message: Number(message.transactionId.slice(1)),
  });
  const range = (from: number, to: number, extra: Partial<Ack> = {}): Ack[] =>
    Array.from({ length: to - from + 1 }, (_, n) => ({ message: from + n, ...extra }));

  /** Same answers, same state and same next delivery whatever the batching. */
  function assertSameResult(
    whole: Awaited<ReturnType<typeof outcome>>,
    split: Awaited<ReturnType<typeof outcome>>,
  ): void {
    assert.deepEqual(whole.answers, split.answers, 'answers');
    assert.deepEqual(whole.state, split.state, 'state after the acks');
    assert.deepEqual(whole.delivered, split.delivered, 'next delivery');
    assert.deepEqual(whole.nextAnswers, split.nextAnswers, 'answers to the next delivery');
    assert.deepEqual(whole.stateAfterNext, split.stateAfterNext, 'state after the next delivery');
  }

  test('in order, one batch: pos moves to the last leased message without reading the batch', async () => {
    const whole = await outcome([{ acks: range(0, 9) }]);
    const split = await outcome([{ acks: range(0, 8) }, { acks: range(9, 9) }]);
    assert.deepEqual(whole.reads, [false], 'the whole lease: no read back');
    assert.deepEqual(split.reads, [true, true], 'the split batches take the general path');
    assertSameResult(whole, split);
    assert.equal(whole.state.consumer.pos, txn(9));
    assert.equal(whole.state.consumer.lease, undefined, 'the lease is released');
    assert.deepEqual(whole.state.resolvedAhead, []);
    assert.deepEqual(
      whole.delivered,
      [txn(10), txn(11)].map((t) => [t, 0]),
    );
  });

  test('one ack out of order in the batch: the same result as in order', async () => {
    const acks = range(0, 9);
    acks.unshift(acks.splice(5, 1)[0] as Ack);
    const whole = await outcome([{ acks }]);
    const split = await outcome([{ acks: acks.slice(0, 9) }, { acks: acks.slice(9) }]);
    assert.deepEqual(whole.reads, [false], 'the whole lease is acked: the shortcut holds in any order');
    assertSameResult(whole, split);
    assert.equal(whole.state.consumer.pos, txn(9));
  });

  test('a redelivered lease with retry counts: the counts of the passed messages are cleared', async () => {
    // lease-1 retries t9 (one failed attempt), completes the rest; lease-2 then holds t9, t10, t11.
    const failed = range(0, 9).map((ack) =>
      ack.message === 9 ? { ...ack, status: 'failed' as const } : ack,
    );
    const whole = await outcome([{ acks: failed }]);
    const split = await outcome([{ acks: failed.slice(0, 5) }, { acks: failed.slice(5) }]);
    assertSameResult(whole, split);
    assert.deepEqual(whole.state.retryCounts, { t9: '1' });
    assert.deepEqual(whole.delivered, [
      [txn(9), 1],
      [txn(10), 0],
      [txn(11), 0],
    ]);
    assert.equal(whole.nextReadBack, false, 'lease-2 is acked whole: the shortcut');
    assert.deepEqual(whole.stateAfterNext.retryCounts, {}, 'acking lease-2 cleared the count of t9');
    assert.equal(whole.stateAfterNext.consumer.pos, txn(11));
  });

  test('the message right after the lease was resolved ahead: pos moves past it too (general path)', async () => {
    const ackAhead: Step = { acks: [{ message: 10, underLease: false }] };
    const whole = await outcome([ackAhead, { acks: range(0, 9) }]);
    const split = await outcome([ackAhead, { acks: range(0, 8) }, { acks: range(9, 9) }]);
    assert.deepEqual(whole.reads, [true, true], 'a: is not empty: the general path');
    assertSameResult(whole, split);
    assert.equal(whole.state.consumer.pos, txn(10));
    assert.deepEqual(whole.state.resolvedAhead, []);
  });

  test('a batch of lease size that acks a message beyond the lease: pos stops before the unacked one', async () => {
    const acks = [...range(0, 8), { message: 10, underLease: false }];
    const whole = await outcome([{ acks }]);
    const split = await outcome([{ acks: acks.slice(0, 4) }, { acks: acks.slice(4) }]);
    assert.deepEqual(whole.reads, [true], 'not every leased message acked: the general path');
    assertSameResult(whole, split);
    assert.equal(whole.state.consumer.pos, txn(8));
    assert.deepEqual(whole.state.resolvedAhead, [txn(10)]);
    assert.equal(whole.state.consumer.lease, 'lease-1', 't9 is still leased');
  });

  test('the whole lease and the message after it in one batch: pos moves past both (general path)', async () => {
    const acks = [...range(0, 9), { message: 10, underLease: false }];
    const whole = await outcome([{ acks }]);
    const split = await outcome([{ acks: acks.slice(0, 5) }, { acks: acks.slice(5) }]);
    assert.deepEqual(whole.reads, [true], 'more acks than the lease: the general path');
    assertSameResult(whole, split);
    assert.equal(whole.state.consumer.pos, txn(10));
    assert.deepEqual(whole.state.resolvedAhead, []);
  });

  test('a message of the lease deleted before the ack: the general path', async () => {
    const remove: Step = { run: (_base, partitionId) => storage.messages.delete(partitionId, txn(4)) };
    const acks = range(0, 9).filter((ack) => ack.message !== 4);
    const whole = await outcome([remove, { acks }]);
    const split = await outcome([remove, { acks: acks.slice(0, 3) }, { acks: acks.slice(3) }]);
    assert.deepEqual(whole.reads, [true], 'one leased message cannot be acked: the general path');
    assertSameResult(whole, split);
    assert.equal(whole.state.consumer.pos, txn(9));
  });

  test('a lease whose pop left no record (a node on the previous release): the general path, the same result', async () => {
    const forget: Step = { run: (base) => redis.hdel(`${base}c:${PARTITION}:${QUEUE_MODE}`, 'from') };
    const without = await outcome([forget, { acks: range(0, 9) }]);
    const withRecord = await outcome([{ acks: range(0, 9) }]);
    assert.deepEqual(without.reads, [true], 'no record: the general path');
    assert.deepEqual(withRecord.reads, [false]);
    assert.deepEqual(without.answers, withRecord.answers);
    assert.deepEqual(without.delivered, withRecord.delivered);
    const { from: _absent, ...rest } = withRecord.state.consumer;
    assert.deepEqual(without.state, { ...withRecord.state, consumer: rest });
  });

  test('the answers a batch leaves: one record where it released the lease with one answer, else a field per ack', async () => {
    const kept = async (steps: Ack[][]) => {
      const { partitionId, base } = await leasedQueue();
      for (const acks of steps) await storage.queues.ack(ackInputs(partitionId, 'lease-1', acks));
      return Object.keys(await redis.hgetall(`${base}la:lease-1`)).sort();
    };
    const fields = (from: number, to: number) =>
      range(from, to).map(({ message }) => `${PARTITION}\n${txn(message)}`);
    assert.deepEqual(await kept([range(0, 9)]), [`*${PARTITION}`], 'the whole lease, completed');
    assert.deepEqual(
      await kept([range(0, 4), range(5, 9)]),
      [`*${PARTITION}`, ...fields(0, 4)].sort(),
      'the batch that released it',
    );
    const mixed = range(0, 9).map((ack) => (ack.message === 3 ? { ...ack, status: 'failed' as const } : ack));
    assert.deepEqual(await kept([mixed]), fields(0, 9).sort(), 'two answers: a field per ack');
    assert.deepEqual(await kept([range(0, 8)]), fields(0, 8).sort(), 'the lease still held: a field per ack');
  });

  test('resend: the same whole-lease ack batch applied twice answers repeats and changes nothing', async () => {
    const { queue, partitionId, base } = await leasedQueue();
    const batch = ackInputs(partitionId, 'lease-1', range(0, 9));
    const { results: first, readBack } = await ackBatch(base, batch);
    assert.equal(readBack, false, 'the first run takes the shortcut');
    const afterFirst = await snapshot(base);
    const second = await storage.queues.ack(batch);
    assert.deepEqual(
      first.map((r) => [r.success, r.repeat, r.leaseReleased]),
      range(0, 9).map(({ message }) => [true, false, message === 9]),
    );
    assert.deepEqual(
      second.map((r) => [r.success, r.error, r.repeat, r.leaseReleased]),
      range(0, 9).map(() => [true, null, true, false]),
    );
    assert.deepEqual(await snapshot(base), afterFirst);
    const next = await pop(queue, 'lease-2', PUSHED);
    assert.deepEqual(
      next.messages.map((message) => message.transactionId),
      [txn(10), txn(11)],
    );
  });
});

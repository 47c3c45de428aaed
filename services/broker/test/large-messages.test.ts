/*
 * Large messages. A pop answers at most 16 MiB of records (the first message always, whatever
 * its size): a batch of 100 messages of 1 MiB was one 100 MiB answer, which Redis took 2.1 s to
 * build, past the 1 s command deadline, so the pop answered 503 with its lease taken, every time.
 * And every script reads large entries a few at a time (lua/includes/read-sized.lua): Redis hands
 * each call's reply to Lua in one buffer that grows 1 MiB at a time. Retention, the partitions
 * view and the outbox's take are bounded by bytes read as well as by count.
 */
import assert from 'node:assert/strict';
import { after, describe, test } from 'node:test';
import { stopTestRedis, uniquePrefix } from '@herald/testkit';
import { Redis } from 'ioredis';
import { POP_BYTES } from '../src/body-budget.js';
import { loadBrokerScripts } from '../src/scripts.js';
import { QUEUE_MODE } from '../src/storage.js';
import {
  BACKENDS,
  type BrokerClient,
  brokerSuite,
  commandsDuring,
  completeAll,
  privateRedisSuite,
  queueName,
} from './helpers.js';

after(() => stopTestRedis());

const MIB = 1024 * 1024;

interface Popped {
  transactionId: string;
  partitionId: string;
  leaseId: string;
  data: { n: number; blob: string };
}

/** Pushes `sizes.length` messages to one partition, message n carrying `sizes[n]` characters. */
async function pushSized(api: BrokerClient, queue: string, sizes: readonly number[]): Promise<void> {
  for (let start = 0; start < sizes.length; start += 8) {
    const items = sizes.slice(start, start + 8).map((size, index) => ({
      queue,
      partition: 'p',
      transactionId: `m${start + index}`,
      payload: { n: start + index, blob: String.fromCharCode(97 + ((start + index) % 26)).repeat(size) },
    }));
    const reply = await api.push(items);
    assert.equal(reply.status, 201, JSON.stringify(reply.body).slice(0, 200));
  }
}

/** Pops batches of 100 until `total` messages came, acking each batch; the count of each pop. */
async function drain(
  api: BrokerClient,
  queue: string,
  total: number,
): Promise<{ counts: number[]; order: number[] }> {
  const counts: number[] = [];
  const order: number[] = [];
  while (order.length < total && counts.length < total + 5) {
    const reply = await api.pop(queue, 'batch=100&wait=false');
    assert.equal(reply.status, 200, JSON.stringify(reply.body).slice(0, 200));
    const messages = (reply.body as { messages: Popped[] }).messages;
    counts.push(messages.length);
    for (const message of messages) {
      const { n, blob } = message.data;
      assert.equal(blob, String.fromCharCode(97 + (n % 26)).repeat(blob.length), `message ${n} intact`);
      order.push(n);
    }
    await completeAll(api, messages);
  }
  return { counts, order };
}

for (const backend of BACKENDS) {
  describe(`large messages (${backend})`, () => {
    // Pushes of 17 MiB on a machine busy with other tests can outlast the default 1 s command
    // deadline (docs/broker-api.md, "Large messages"): these tests are about the pop.
    const suite = brokerSuite(backend, backend === 'redis' ? { REDIS_COMMAND_TIMEOUT: '30000' } : {});

    test('a pop answers at most 16 MiB of records; every message comes once, in order', async () => {
      const queue = queueName('large');
      await pushSized(
        suite.api,
        queue,
        Array.from({ length: 40 }, () => MIB),
      );
      const { counts, order } = await drain(suite.api, queue, 40);
      assert.deepEqual(
        order,
        Array.from({ length: 40 }, (_, n) => n),
      );
      // Records are a little over 1 MiB each (their header and the JSON around the blob).
      assert.deepEqual(counts, [15, 15, 10], 'each pop stops before its records pass 16 MiB');
    });

    test('a message larger than the limit comes alone, and the ones after it follow', async () => {
      const queue = queueName('larger');
      const sizes = [1000, POP_BYTES + MIB, 1000, 1000];
      await pushSized(suite.api, queue, sizes);
      const { counts, order } = await drain(suite.api, queue, sizes.length);
      assert.deepEqual(order, [0, 1, 2, 3]);
      assert.deepEqual(counts, [1, 1, 2], 'the large one is never joined to a batch, and always goes');
    });
  });
}

/*
 * Every script that reads a run of entries reads them a few at a time while they are large
 * (lua/includes/read-sized.lua). Before, the pop read its whole batch in one call, and an ack out
 * of order, a lease expiry, retention, the partitions view and the outbox's take read 9 to
 * 10,000 entries in one call, the last three with no bound by size. MONITOR on the standalone
 * test Redis (the default topology of the suites).
 */
describe('the scripts read large entries a few at a time (redis)', () => {
  const suite = privateRedisSuite({ REDIS_COMMAND_TIMEOUT: '30000' });

  interface Read {
    /** The key's suffix after the queue's base: `s:p`, `dlq`. */
    key: string;
    /** The COUNT asked; Infinity for a read without one. */
    count: number;
  }

  /** Each XRANGE and XREVRANGE of more than one id the scripts ran on the queue's keys during `action`. */
  async function readsDuring(queue: string, action: () => Promise<void>): Promise<Read[]> {
    return readsOf(await commandsDuring(suite.url, queue, action));
  }

  function readsOf(commands: readonly string[][]): Read[] {
    return commands
      .filter(([command, , from, to]) => (command === 'XRANGE' || command === 'XREVRANGE') && from !== to)
      .map((args) => {
        const at = args.indexOf('COUNT');
        return { key: args[1] as string, count: at < 0 ? Number.POSITIVE_INFINITY : Number(args[at + 1]) };
      });
  }

  /** `count` messages of 1 MiB on partition p, leased by one pop; the popped messages. */
  async function leased(queue: string, count: number): Promise<Popped[]> {
    await pushSized(
      suite.api,
      queue,
      Array.from({ length: count }, () => MIB),
    );
    const reply = await suite.api.pop(queue, `batch=${count}&wait=false`);
    assert.equal(reply.status, 200);
    const messages = (reply.body as { messages: Popped[] }).messages;
    assert.equal(messages.length, count);
    return messages;
  }

  function assertOneAtATime(reads: readonly Read[], key = 's:p'): void {
    assert.ok(
      reads.some((read) => read.key === key),
      `the scripts read ${key}: ${JSON.stringify(reads)}`,
    );
    assert.deepEqual(
      reads.filter((read) => read.count !== 1),
      [],
      'every read of 1 MiB entries asks for one',
    );
  }

  const ack = (message: Popped, status = 'completed') => ({
    transactionId: message.transactionId,
    partitionId: message.partitionId,
    leaseId: message.leaseId,
    status,
  });

  /** The COUNT of each XRANGE of the queue's partition during one pop. */
  async function popReads(queue: string): Promise<number[]> {
    const reads = await readsDuring(queue, async () => {
      const reply = await suite.api.pop(queue, 'batch=100&wait=false');
      assert.equal(reply.status, 200);
    });
    return reads.filter((read) => read.key === 's:p').map((read) => read.count);
  }

  test('a pop, entries of 1 MiB: one per XRANGE', async () => {
    const queue = await suite.queue('mib');
    await pushSized(
      suite.api,
      queue,
      Array.from({ length: 12 }, () => MIB),
    );
    const counts = await popReads(queue);
    assert.ok(counts.length >= 12, `${counts.length} reads`);
    assert.deepEqual([...new Set(counts)], [1]);
  });

  test('a pop, small entries: the batch in two reads (one to learn their size)', async () => {
    const queue = await suite.queue('small');
    await pushSized(
      suite.api,
      queue,
      Array.from({ length: 100 }, () => 100),
    );
    const counts = await popReads(queue);
    assert.equal(counts[0], 1);
    assert.equal(counts.length, 2, `reads: ${counts.join(', ')}`);
    assert.ok((counts[1] ?? 0) >= 99, `reads: ${counts.join(', ')}`);
  });

  test('acks out of order', async () => {
    const queue = await suite.queue('ooo');
    const [first, ...rest] = await leased(queue, 10);
    const reads = await readsDuring(queue, async () => {
      const later = await suite.api.ackBatch({ acknowledgments: rest.map((message) => ack(message)) });
      assert.equal(later.status, 200);
      const then = await suite.api.ackBatch({ acknowledgments: [ack(first as Popped)] });
      assert.equal(then.status, 200);
    });
    assertOneAtATime(reads);
    const next = await suite.api.pop(queue, 'wait=false');
    assert.equal(next.status, 204, 'every message resolved');
  });

  test('a lease that expires', async () => {
    const queue = await suite.queue('expire');
    await suite.api.configure(queue, { leaseTime: 60, retryLimit: 3 });
    await leased(queue, 10);
    await suite.clock.advance(61_000);
    const reads = await readsDuring(queue, async () => {
      const again = await suite.api.pop(queue, 'batch=10&wait=false');
      assert.equal(again.status, 200);
      const messages = (again.body as { messages: (Popped & { retryCount: number })[] }).messages;
      assert.deepEqual(
        messages.map((message) => [message.data.n, message.retryCount]),
        Array.from({ length: 10 }, (_, n) => [n, 1]),
      );
    });
    assertOneAtATime(reads);
  });

  test('retention', async () => {
    const queue = await suite.queue('retain');
    await suite.api.configure(queue, { retentionEnabled: true, completedRetentionSeconds: 1 });
    await completeAll(suite.api, await leased(queue, 10));
    await suite.clock.advance(1001);
    let deleted = 0;
    const reads = await readsDuring(queue, async () => {
      deleted = await suite.broker.storage.housekeeping.applyRetention();
    });
    assert.equal(deleted, 10);
    assertOneAtATime(reads);
  });

  test('the partitions view (queue detail), its lags and dead letters', async () => {
    const queue = await suite.queue('detail');
    await suite.api.configure(queue, { deadLetterQueue: true });
    const [first, ...rest] = await leased(queue, 10);
    const failed = await suite.api.ackBatch({ acknowledgments: [ack(first as Popped, 'dlq')] });
    assert.equal(failed.status, 200);
    const reads = await readsDuring(queue, async () => {
      const [state, ...others] = await suite.broker.storage.groups.partitions(queue);
      assert.equal(others.length, 0);
      assert.equal(state?.deadLetters, 1);
      assert.deepEqual(
        state?.groups.map((group) => [group.lag, group.leased]),
        [[9, 9]],
      );
    });
    assertOneAtATime(reads);
    assertOneAtATime(reads, 'dlq');
    await completeAll(suite.api, rest);
  });

  test('the stats job reads a waiting entry once, not at every run', async () => {
    const queue = await suite.queue('stats');
    const partitionIds: Record<string, string> = {};
    const push = async (partition: string, transactionId: string) => {
      const blob = 'x'.repeat(MIB);
      const reply = await suite.api.push([{ queue, partition, transactionId, payload: { blob } }]);
      assert.equal(reply.status, 201);
      partitionIds[partition] = (reply.body as { partition_id: string }[])[0]?.partition_id ?? '';
    };
    const remove = (partition: string, transactionId: string) =>
      suite.broker.storage.messages.delete(partitionIds[partition] as string, transactionId);
    // The queue's group comes with a first pop: of a message on a fourth partition.
    await push('first', 'f');
    await completeAll(
      suite.api,
      ((await suite.api.pop(queue, 'wait=false')).body as { messages: Popped[] }).messages,
    );
    await push('a', 'a1');
    await suite.clock.advance(1000);
    await push('b', 'b1');
    await push('c', 'c1');
    const statsRun = async (): Promise<{ partitions: string[]; oldestAt: number }> => {
      let oldestAt = -1;
      const reads = await readsDuring(queue, async () => {
        const stats = (await suite.broker.storage.housekeeping.refreshStats()).find(
          (row) => row.queue === queue,
        );
        oldestAt = stats?.groups[0]?.oldestPendingAt ?? -1;
      });
      return { partitions: reads.map((read) => read.key).sort(), oldestAt };
    };
    const first = await statsRun();
    assert.deepEqual(first.partitions, ['s:a', 's:b', 's:c']);
    assert.ok(first.oldestAt > 0, 'the oldest waiting message has a time');
    await suite.clock.advance(5000);
    assert.deepEqual(
      await statsRun(),
      { partitions: [], oldestAt: first.oldestAt },
      'nothing moved: nothing read',
    );

    // a1 consumed and a2 pushed: a's position moved, its next entry is read again.
    const popped = (await suite.api.pop(queue, 'partition=a&wait=false')).body as { messages: Popped[] };
    assert.deepEqual(
      popped.messages.map((message) => message.transactionId),
      ['a1'],
    );
    await completeAll(suite.api, popped.messages);
    await push('a', 'a2');
    const moved = await statsRun();
    assert.deepEqual(moved.partitions, ['s:a']);
    assert.ok(moved.oldestAt > first.oldestAt, 'b1 and c1 are now the oldest');

    // b1 deleted where nobody's position moved: b's next entry is read again, and is none.
    assert.equal(await remove('b', 'b1'), true);
    const afterDelete = await statsRun();
    assert.deepEqual(afterDelete.partitions, ['s:b']);
    assert.equal(afterDelete.oldestAt, moved.oldestAt, 'c1 was pushed with b1');
    assert.equal(await remove('c', 'c1'), true);
    const onlyA2 = await statsRun();
    // b, empty since b1 went and still in the ready set, is read at every run: a read of nothing
    // (none is not kept: a push would add an entry without moving the position).
    assert.deepEqual(onlyA2.partitions, ['s:b', 's:c']);
    assert.ok(onlyA2.oldestAt > moved.oldestAt, `a2 is the oldest now: ${JSON.stringify(onlyA2)}`);
  });

  test('the stats job reads again after a seek: the entry it kept may be gone', async () => {
    const queue = await suite.queue('stats-seek');
    await suite.api.configure(queue, { retentionEnabled: true, completedRetentionSeconds: 1 });
    assert.equal((await suite.api.pop(queue, 'consumerGroup=A&subscriptionMode=all&wait=false')).status, 204);
    await pushSized(suite.api, queue, [100]);
    await suite.clock.advance(2000);
    await suite.api.push([{ queue, partition: 'p', transactionId: 'later', payload: { n: 1 } }]);
    const oldestOfA = async () => {
      const stats = (await suite.broker.storage.housekeeping.refreshStats()).find(
        (row) => row.queue === queue,
      );
      return stats?.groups.find((group) => group.group === 'A')?.oldestPendingAt ?? -1;
    };
    const first = await oldestOfA();
    const popped = await suite.api.pop(queue, 'consumerGroup=A&batch=1&wait=false');
    const [message] = (popped.body as { messages: Popped[] }).messages;
    const done = await suite.api.ackBatch({
      acknowledgments: [{ ...ack(message as Popped), consumerGroup: 'A' }],
    });
    assert.deepEqual(
      (done.body as { success: boolean }[]).map((result) => result.success),
      [true],
    );
    await suite.clock.advance(1001);
    assert.equal(await suite.broker.storage.housekeeping.applyRetention(), 1, 'the first message is deleted');
    const seek = await suite.api.call(
      'POST',
      `/api/v1/consumer-groups/A/queues/${encodeURIComponent(queue)}/seek`,
      { timestamp: 0 },
    );
    assert.equal(seek.status, 200);
    const after = await oldestOfA();
    assert.ok(after >= first + 2000, `the second message is A's oldest now: ${first} then ${after}`);
  });

  test('retention looks at a leased message again when it is due, not every second', async () => {
    const queue = await suite.queue('retain-leased');
    await suite.api.configure(queue, { retentionEnabled: true, retentionSeconds: 3600, leaseTime: 600 });
    const [message] = await leased(queue, 1);
    const runReads = async () =>
      (
        await readsDuring(queue, async () => {
          await suite.broker.storage.housekeeping.applyRetention();
        })
      ).filter((read) => read.key === 's:p').length;
    assert.equal(await runReads(), 1, 'the push scheduled the partition');
    await suite.clock.advance(2000);
    assert.equal(await runReads(), 0, 'an hour before its retention, the leased message is not read again');
    await completeAll(suite.api, [message as Popped]);
    await suite.clock.advance(3_600_000);
    // Due: read and deleted (then a read of what follows it: nothing).
    assert.ok((await runReads()) >= 1, 'due: read');
    assert.equal((await suite.api.pop(queue, 'wait=false')).status, 204);
    const [state] = await suite.broker.storage.groups.partitions(queue);
    assert.equal(state?.retained, 0);
  });

  test('retention reads at most 32 MiB per call: 40 messages of 1 MiB go in two', async () => {
    const queue = await suite.queue('retain-budget');
    await suite.api.configure(queue, { retentionEnabled: true, completedRetentionSeconds: 1 });
    await pushSized(
      suite.api,
      queue,
      Array.from({ length: 40 }, () => MIB),
    );
    await drain(suite.api, queue, 40);
    await suite.clock.advance(1001);
    let deleted = 0;
    const commands = await commandsDuring(suite.url, queue, async () => {
      deleted = await suite.broker.storage.housekeeping.applyRetention();
    });
    const trims = commands.filter(([command, key]) => command === 'XTRIM' && key === 's:p').length;
    assert.equal(deleted, 40);
    assert.equal(trims, 2, 'one cut of the stream per call');
    assertOneAtATime(readsOf(commands));
  });

  test('the partitions view reads at most 32 MiB: past it, the lag is a lower bound', async () => {
    const queue = await suite.queue('detail-budget');
    await pushSized(
      suite.api,
      queue,
      Array.from({ length: 40 }, () => MIB),
    );
    const popped = await suite.api.pop(queue, 'batch=100&wait=false');
    assert.equal((popped.body as { messages: Popped[] }).messages.length, 15);
    const [state] = await suite.broker.storage.groups.partitions(queue);
    // Records are a little over 1 MiB: the 32nd brings the bytes read past 32 MiB.
    assert.deepEqual(
      state?.groups.map((group) => group.lag),
      [32],
    );
    assert.equal(state?.retained, 40);
    await completeAll(suite.api, (popped.body as { messages: Popped[] }).messages);
    await drain(suite.api, queue, 25);
  });

  test('the outbox: a take answers at most 16 MiB of intents, the first always', async () => {
    const queue = queueName('outbox');
    const base = `${uniquePrefix('large-outbox')}{${encodeURIComponent(queue)}}:`;
    const redis = new Redis(suite.url);
    const script = loadBrokerScripts().get('outbox-take');
    assert.ok(script);
    try {
      // The relay reads intents as XRANGE gives them (outbox-take-1.lua): a field list each.
      for (let n = 0; n < 20; n++) await redis.xadd(`${base}ob`, '*', 'n', String(n), 'd', 'x'.repeat(MIB));
      await redis.xadd(`${base}ob`, '*', 'n', '20', 'd', 'x'.repeat(POP_BYTES + MIB));
      const taken: number[][] = [];
      const reads = await readsDuring(queue, async () => {
        for (let take = 0; take < 5; take++) {
          const [held, entries] = (await redis.eval(script.source, 1, base, 'relay', 60_000, 500)) as [
            number,
            [string, string[]][],
          ];
          assert.equal(held, 1);
          if (entries.length === 0) break;
          taken.push(entries.map(([, fields]) => Number(fields[1])));
          await redis.xdel(`${base}ob`, ...entries.map(([id]) => id));
        }
      });
      // Each intent carries a little over 1 MiB: a 16th would pass 16 MiB.
      const numbers = (from: number, to: number) =>
        Array.from({ length: to - from }, (_, index) => from + index);
      assert.deepEqual(taken, [numbers(0, 15), numbers(15, 20), [20]]);
      assertOneAtATime(reads, 'ob');
    } finally {
      redis.disconnect();
    }
  });

  /*
   * The views read stream entries with plain commands (redis/read-range.ts). Before, the message
   * list read up to 1,000 entries in one XRANGE and kept them all, the status view offset + limit
   * of every partition and 10,000 dead letters, a dead-letter page offset + limit and, with a
   * group, the whole dead-letter stream.
   */

  /** The COUNT of each plain (node-side) read of `key` among `commands`. */
  function plainReads(commands: readonly string[][], key: string): number[] {
    return commands
      .filter(([command, at]) => (command === 'xrange' || command === 'xrevrange') && at === key)
      .map((args) => Number(args[args.indexOf('COUNT') + 1]));
  }

  /** 40 messages of 1 MiB on partition p, all dead-lettered. */
  async function deadLettered(queue: string): Promise<void> {
    await suite.api.configure(queue, { deadLetterQueue: true });
    await pushSized(
      suite.api,
      queue,
      Array.from({ length: 40 }, () => MIB),
    );
    for (let letters = 0; letters < 40; ) {
      const reply = await suite.api.pop(queue, 'batch=100&wait=false');
      const messages = (reply.body as { messages: Popped[] }).messages;
      const failed = await suite.api.ackBatch({
        acknowledgments: messages.map((message) => ack(message, 'dlq')),
      });
      assert.equal(failed.status, 200);
      letters += messages.length;
    }
  }

  test('the message list keeps at most 32 MiB of entries, read one at a time', async () => {
    const queue = await suite.queue('list-budget');
    await pushSized(
      suite.api,
      queue,
      Array.from({ length: 40 }, () => MIB),
    );
    let listed: number[] = [];
    const commands = await commandsDuring(suite.url, queue, async () => {
      const views = await suite.broker.storage.messages.list({ queue, limit: 1000 });
      listed = views.map((view) => (view.data as { n: number }).n);
    });
    // Records are a little over 1 MiB: the 32nd brings what the view holds past 32 MiB.
    assert.deepEqual(
      listed,
      Array.from({ length: 32 }, (_, n) => n),
    );
    const reads = plainReads(commands, 's:p');
    assert.equal(reads.length, 32);
    assert.deepEqual([...new Set(reads)], [1]);
  });

  test('the status view lists every entry, holding no payload, read one at a time', async () => {
    const queue = await suite.queue('status-budget');
    await deadLettered(queue);
    let rows: string[] = [];
    const commands = await commandsDuring(suite.url, queue, async () => {
      const states = await suite.broker.storage.messages.states({ queue, limit: 1000, offset: 0 });
      rows = states.map((state) => state.status);
    });
    assert.deepEqual(
      rows,
      Array.from({ length: 40 }, () => 'dead_letter'),
    );
    const reads = [...plainReads(commands, 's:p'), ...plainReads(commands, 'dlq')];
    assert.equal(reads.length, 82, 'each stream: 40 entries, and a last read finding none');
    assert.deepEqual([...new Set(reads)], [1]);
  });

  test("a dead-letter page keeps at most 32 MiB; a group's total counts every letter", async () => {
    const queue = await suite.queue('dlq-budget');
    await deadLettered(queue);
    const numbers = (letters: readonly { data: unknown }[]) =>
      letters.map((letter) => (letter.data as { n: number }).n);
    const all = await suite.broker.storage.deadLetters.list({ queue, limit: 1000, offset: 0 });
    assert.equal(all.total, 40);
    assert.deepEqual(
      numbers(all.messages),
      Array.from({ length: 32 }, (_, n) => n),
    );
    const group = await suite.broker.storage.deadLetters.list({
      queue,
      group: QUEUE_MODE,
      limit: 1000,
      offset: 5,
    });
    assert.equal(group.total, 40);
    assert.deepEqual(
      numbers(group.messages),
      Array.from({ length: 32 }, (_, n) => n + 5),
    );
    const other = await suite.broker.storage.deadLetters.list({
      queue,
      group: 'other',
      limit: 10,
      offset: 0,
    });
    assert.deepEqual([other.total, other.messages.length], [0, 0]);
  });
});

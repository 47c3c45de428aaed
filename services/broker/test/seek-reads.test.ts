/*
 * What a seek reads. A seek sets the group's backlog (pending:<g>, which maxSize reads) to what
 * is left after its new positions, and Redis has no count of a stream range: the old seek read
 * every entry after the group's old position, then every entry after its new one, in one script.
 * A group millions behind that skipped to the end had Redis read its whole backlog while it
 * served nobody else (~1 s per million small messages, ~8 s per million of 4 KiB). Now a seek to
 * the end or to before every message reads one entry at each end of a partition, and a seek to a
 * time among the messages reads the side of it nearer in time (lua/includes/unresolved-in.lua).
 * MONITOR on a private standalone Redis; backlog-counters.test.ts checks the counts themselves.
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { commandsDuring, privateRedisSuite } from './helpers.js';

interface Read {
  /** The key's suffix after the queue's base: `s:a`. */
  key: string;
  from: string;
  to: string;
  count: number;
}

describe('a seek reads the stream near its position only (redis)', () => {
  const suite = privateRedisSuite();

  /** The XRANGE and XREVRANGE reads of the queue's partition streams during `action`. */
  async function readsDuring(queue: string, action: () => Promise<void>): Promise<Read[]> {
    const commands = await commandsDuring(suite.url, queue, action);
    return commands
      .filter(([command, key]) => (command === 'XRANGE' || command === 'XREVRANGE') && key?.startsWith('s:'))
      .map(([, key, from, to, , count]) => ({
        key: key as string,
        from: from as string,
        to: to as string,
        count: Number(count ?? Number.POSITIVE_INFINITY),
      }));
  }

  /** The reads that go on to a partition's end and ask for more than its last entry. */
  const pastThePosition = (reads: readonly Read[]) =>
    reads.filter((read) => (read.to === '+' || read.from === '+') && read.count !== 1);

  async function seek(queue: string, body: unknown, partition?: string): Promise<void> {
    const at = partition === undefined ? '' : `/partitions/${partition}`;
    const reply = await suite.api.call(
      'POST',
      `/api/v1/consumer-groups/g/queues/${encodeURIComponent(queue)}${at}/seek`,
      body,
    );
    assert.equal(reply.status, 200, JSON.stringify(reply.body));
  }

  async function push(queue: string, partition: string, from: number, count: number): Promise<void> {
    const items = Array.from({ length: count }, (_, index) => ({
      queue,
      partition,
      transactionId: `${partition}${from + index}`,
      payload: from + index,
    }));
    assert.equal((await suite.api.push(items)).status, 201);
  }

  /** What group g pops from now on, in order (acked as it goes). */
  async function drain(queue: string): Promise<number[]> {
    const seen: number[] = [];
    for (;;) {
      const reply = await suite.api.pop(queue, 'consumerGroup=g&batch=1000&wait=false&autoAck=true');
      if (reply.status === 204) return seen;
      assert.equal(reply.status, 200);
      seen.push(...(reply.body.messages as { data: number }[]).map((message) => message.data));
    }
  }

  test('to the end, of one partition or of all, and back before every message: no backlog read', async () => {
    const queue = await suite.queue('seek-ends');
    // The group exists at the start; 300 messages wait in each partition.
    assert.equal((await suite.api.pop(queue, 'consumerGroup=g&wait=false')).status, 204);
    await push(queue, 'a', 0, 300);
    await push(queue, 'b', 1000, 300);

    const one = await readsDuring(queue, () => seek(queue, { toEnd: true }, 'a'));
    assert.deepEqual(pastThePosition(one), [], JSON.stringify(one));
    const all = await readsDuring(queue, () => seek(queue, { toEnd: true }));
    assert.deepEqual(pastThePosition(all), [], JSON.stringify(all));
    assert.deepEqual(await drain(queue), []);

    await push(queue, 'a', 300, 1);
    assert.deepEqual(await drain(queue), [300]);
    const back = await readsDuring(queue, () => seek(queue, { timestamp: 0 }));
    assert.deepEqual(pastThePosition(back), [], JSON.stringify(back));
    const replayed = await drain(queue);
    assert.equal(replayed.length, 601);
  });

  test('to a time among the messages: the side nearer in time is read', async () => {
    const queue = await suite.queue('seek-middle');
    assert.equal((await suite.api.pop(queue, 'consumerGroup=g&wait=false')).status, 204);
    const early = suite.clock.now();
    await push(queue, 'a', 0, 5);
    await suite.clock.advance(10_000);
    await push(queue, 'a', 5, 300);
    await suite.clock.advance(1000);

    // One second after the first five, nine before the rest: the five are read, not the 300.
    const reads = await readsDuring(queue, () => seek(queue, { timestamp: early + 1000 }));
    assert.deepEqual(pastThePosition(reads), [], JSON.stringify(reads));
    assert.ok(
      reads.some((read) => read.from === '-' && read.to !== '+'),
      `the head side is read: ${JSON.stringify(reads)}`,
    );
    assert.deepEqual(
      await drain(queue),
      Array.from({ length: 300 }, (_, index) => 5 + index),
    );

    // A group created from that time counts its backlog the same way.
    const created = await readsDuring(queue, async () => {
      const from = new Date(early + 1000).toISOString();
      const reply = await suite.api.pop(queue, `consumerGroup=late&subscriptionFrom=${from}&wait=false`);
      assert.equal(reply.status, 200);
    });
    // The pop's own read of its batch starts at the new group's position; no other goes on.
    const position = `(${early + 999}-18446744073709551615`;
    assert.deepEqual(
      pastThePosition(created).filter((read) => read.from !== position),
      [],
      JSON.stringify(created),
    );
    assert.ok(
      created.some((read) => read.from === '-' && read.to !== '+'),
      `the head side is read: ${JSON.stringify(created)}`,
    );
  });
});

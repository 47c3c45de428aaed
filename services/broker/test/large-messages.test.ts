/*
 * Large messages on the consume path. A pop answers at most 16 MiB of records (the first message
 * always, whatever its size): a batch of 100 messages of 1 MiB was one 100 MiB answer, which
 * Redis took 2.1 s to build, past the 1 s command deadline, so the pop answered 503 with its
 * lease taken, every time. And the pop script reads large entries a few at a time: Redis hands
 * each call's reply to Lua in one buffer that grows 1 MiB at a time.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { RedisMonitor, stopTestRedis, testRedisUrl, uniquePrefix } from '@herald/testkit';
import { Redis } from 'ioredis';
import type { Broker } from '../src/index.js';
import {
  BACKENDS,
  type BrokerClient,
  brokerSuite,
  client,
  completeAll,
  queueName,
  startTestBroker,
} from './helpers.js';

after(() => stopTestRedis());

const MIB = 1024 * 1024;
/** The pop script's POP_BYTES. */
const POP_BYTES = 16 * MIB;

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

describe('the pop script reads large entries a few at a time (redis)', () => {
  let broker: Broker;
  let api: BrokerClient;
  let url: string;
  const prefix = uniquePrefix('large-read');
  before(async () => {
    url = await testRedisUrl();
    broker = await startTestBroker('redis', {
      REDIS_URL: url,
      BROKER_KEY_PREFIX: prefix,
      REDIS_COMMAND_TIMEOUT: '30000',
    });
    api = client(broker.url);
  });
  after(() => broker.close());

  /** The COUNT of each XRANGE the scripts ran on the queue's partition during one pop. */
  async function xrangeCounts(queue: string): Promise<number[]> {
    const stream = `${prefix}{${encodeURIComponent(queue)}}:s:p`;
    const counts: number[] = [];
    let marker: (() => void) | undefined;
    const done = new Promise<void>((resolve) => {
      marker = resolve;
    });
    const monitor = await RedisMonitor.start(url, (args) => {
      if (args[0] === 'XRANGE' && args[1] === stream) counts.push(Number(args[args.indexOf('COUNT') + 1]));
      if (args[0] === 'echo' && args[1] === `${prefix}done`) marker?.();
    });
    try {
      const reply = await api.pop(queue, 'batch=100&wait=false');
      assert.equal(reply.status, 200);
      // MONITOR shows every command Redis ran before this one.
      const redis = new Redis(url);
      await redis.echo(`${prefix}done`);
      await done;
      redis.disconnect();
    } finally {
      monitor.stop();
    }
    return counts;
  }

  test('entries of 1 MiB: one per XRANGE', async () => {
    const queue = queueName('mib');
    await pushSized(
      api,
      queue,
      Array.from({ length: 12 }, () => MIB),
    );
    const counts = await xrangeCounts(queue);
    assert.ok(counts.length >= 12, `${counts.length} reads`);
    assert.deepEqual([...new Set(counts)], [1]);
  });

  test('small entries: the batch in two reads (one to learn their size)', async () => {
    const queue = queueName('small');
    await pushSized(
      api,
      queue,
      Array.from({ length: 100 }, () => 100),
    );
    const counts = await xrangeCounts(queue);
    assert.equal(counts[0], 1);
    assert.equal(counts.length, 2, `reads: ${counts.join(', ')}`);
    assert.ok((counts[1] ?? 0) >= 99, `reads: ${counts.join(', ')}`);
  });
});

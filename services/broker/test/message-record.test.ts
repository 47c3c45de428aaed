/*
 * A partition's stream keeps each message as one record (redis/message-record.ts,
 * lua/includes/message-fields.lua): a JSON header and the payload's text. Fields holding what
 * JSON escapes come back as pushed through every path that reads a record: the pop and the
 * message views in the node, dead-lettering, requeueing and retention in Lua, on both backends.
 * Entries in the five-field layout of earlier releases (by position, or by name) are read by the
 * same paths.
 */
import assert from 'node:assert/strict';
import { after, describe, test } from 'node:test';
import { createRedis, KeyClock } from '@herald/redis';
import { stopTestRedis, testRedisUrl, uniquePrefix } from '@herald/testkit';
import { Redis } from 'ioredis';
import { entryFields } from '../src/redis/message-record.js';
import {
  BACKENDS,
  type BrokerClient,
  client,
  clockedBrokerSuite,
  completeAll,
  queueName,
  startTestBroker,
} from './helpers.js';

after(() => stopTestRedis());

/** What JSON escapes or spells with more than one byte, and the header's own separator. */
const ODD = 'line\nbreak "quoted" back\\slash /slash \u0000nul \u001f \u2028 é 🎉';

interface Sent {
  transactionId: string;
  traceId: string;
  payload: unknown;
}

const sent = (label: string): Sent => ({
  transactionId: `${label} ${ODD}`,
  traceId: `trace ${label} ${ODD}`,
  payload: { label, text: ODD, nested: [ODD, { deeper: ODD }] },
});

/** A message as the API shows it, reduced to what was pushed. */
const asSent = (message: { transactionId: string; traceId: string | null; data: unknown }): Sent => ({
  transactionId: message.transactionId,
  traceId: message.traceId ?? '',
  payload: message.data,
});

async function popAll(api: BrokerClient, queue: string) {
  const popped = await api.pop(queue, 'batch=10');
  assert.equal(popped.status, 200);
  return popped.body.messages as {
    id: string;
    transactionId: string;
    traceId: string | null;
    data: unknown;
    partitionId: string;
    leaseId: string;
    retryCount: number;
  }[];
}

/**
 * Checks the message list, pops `expected` (in order), dead-letters the first and completes the
 * rest, checks the dead letters, requeues the first and pops it again.
 */
async function readEveryWay(api: BrokerClient, queue: string, expected: Sent[]): Promise<void> {
  const listed = await api.call('GET', `/api/v1/messages?queue=${encodeURIComponent(queue)}`);
  assert.equal(listed.status, 200);
  assert.deepEqual(
    (listed.body.messages as Parameters<typeof asSent>[0][]).map(asSent).sort(byTransaction),
    [...expected].sort(byTransaction),
    'the message list',
  );

  const popped = await popAll(api, queue);
  assert.deepEqual(popped.map(asSent), expected, 'the pop');
  const [first] = popped;
  assert.ok(first);
  const dead = await api.ack({
    transactionId: first.transactionId,
    partitionId: first.partitionId,
    leaseId: first.leaseId,
    status: 'dlq',
    error: `bad ${ODD}`,
  });
  assert.equal(dead.body[0].success, true);
  const letters = await api.call('GET', `/api/v1/dlq?queue=${encodeURIComponent(queue)}`);
  assert.deepEqual(
    letters.body.messages.map(
      (letter: { id: string; errorMessage: string } & Parameters<typeof asSent>[0]) => [
        letter.id,
        asSent(letter),
        letter.errorMessage,
      ],
    ),
    [[first.id, expected[0], `bad ${ODD}`]],
    'the dead letter',
  );

  await completeAll(api, popped.slice(1));
  const requeued = await api.call('POST', '/api/v1/dlq/requeue', { queue, all: true });
  assert.equal(requeued.body.requeued, 1);
  const again = await api.pop(queue);
  assert.equal(again.status, 200);
  const [back] = again.body.messages;
  assert.deepEqual(asSent(back), expected[0], 'the requeued message');
  assert.notEqual(back.id, first.id, 'a requeued message is a new message');
  assert.equal(back.retryCount, 0);
}

function byTransaction(a: Sent, b: Sent): number {
  return a.transactionId < b.transactionId ? -1 : a.transactionId > b.transactionId ? 1 : 0;
}

for (const backend of BACKENDS) {
  describe(`message records (${backend})`, () => {
    const suite = clockedBrokerSuite(backend);

    test('fields holding what JSON escapes come back as pushed: pop, views, dead letter, requeue', async () => {
      const queue = await suite.queue('record');
      const expected = [sent('a'), sent('b')];
      const pushed = await suite.api.push(expected.map((item) => ({ queue, ...item })));
      assert.equal(pushed.status, 201);
      await readEveryWay(suite.api, queue, expected);
    });

    test('retention removes a record together with its dedup entry: the same transactionId is new again', async () => {
      const queue = await suite.queue('record-retained');
      await suite.api.configure(queue, { retentionEnabled: true, completedRetentionSeconds: 1 });
      // One transactionId read from the header as it is, one (escapes) decoded.
      const items = [
        { queue, ...sent('plain'), transactionId: 'plain-1' },
        { queue, ...sent('kept') },
      ];
      await suite.api.push(items);
      await completeAll(suite.api, await popAll(suite.api, queue));
      const statuses = async () =>
        (await suite.api.push(items)).body.map((result: { status: string }) => result.status);
      assert.deepEqual(await statuses(), ['duplicate', 'duplicate'], 'retained: duplicates');
      await suite.clock.advance(1001);
      assert.equal(await suite.broker.storage.housekeeping.applyRetention(), 2);
      assert.deepEqual(await statuses(), ['queued', 'queued'], 'deleted with their dedup entries');
    });
  });
}

describe('message entries of earlier releases (redis)', () => {
  const prefix = uniquePrefix('legacy-record');
  const base = (queue: string) => `${prefix}{${encodeURIComponent(queue)}}:`;

  /**
   * Rewrites the stream of `queue`'s default partition as an earlier release wrote it, keeping
   * the ids: the first entry with its five fields in push order, the second by name in another
   * order, the rest as records.
   */
  async function asEarlierRelease(redis: Redis, queue: string): Promise<void> {
    const key = `${base(queue)}s:Default`;
    const entries = (await redis.xrange(key, '-', '+')) as [string, string[]][];
    const rewrite = redis.multi().del(key);
    entries.forEach(([id, list], index) => {
      const f = entryFields(list);
      if (index === 0)
        rewrite.xadd(key, id, 'm', f.id, 't', f.transactionId, 'tr', f.traceId, 'd', f.data, 's', '');
      else if (index === 1)
        rewrite.xadd(key, id, 's', '', 'd', f.data, 'tr', f.traceId, 't', f.transactionId, 'm', f.id);
      else rewrite.xadd(key, id, ...list);
    });
    await rewrite.exec();
    const layouts = ((await redis.xrange(key, '-', '+')) as [string, string[]][]).map(([, list]) => list[0]);
    assert.deepEqual(layouts, ['m', 's', 'r'].slice(0, entries.length));
  }

  test('entries with five fields pop, show, dead-letter, requeue and retain as records do', async () => {
    const url = await testRedisUrl();
    const redis = new Redis(url);
    const clockRedis = createRedis({ topology: { kind: 'standalone', url }, connectionName: 'test-clock' });
    const clock = new KeyClock(Date.now(), clockRedis);
    const broker = await startTestBroker('redis', { REDIS_URL: url, BROKER_KEY_PREFIX: prefix }, clock);
    const api = client(broker.url);
    try {
      const queue = queueName('legacy');
      const retained = queueName('legacy-retained');
      await clock.track([base(queue), base(retained)]);
      const expected = [sent('first'), sent('second'), sent('third')];
      await api.push(expected.map((item) => ({ queue, ...item })));
      await asEarlierRelease(redis, queue);
      await readEveryWay(api, queue, expected);

      // Retention reads the transactionId of entries of either layout to delete their dedup entry.
      await api.configure(retained, { retentionEnabled: true, retentionSeconds: 1 });
      const items = [sent('x'), sent('y')].map((item) => ({ queue: retained, ...item }));
      await api.push(items);
      await asEarlierRelease(redis, retained);
      await clock.advance(1001);
      assert.equal(await broker.storage.housekeeping.applyRetention(), 2);
      const again = await api.push(items);
      assert.deepEqual(
        again.body.map((result: { status: string }) => result.status),
        ['queued', 'queued'],
        'both dedup entries went with their messages',
      );
    } finally {
      await broker.close();
      redis.disconnect();
      clockRedis.disconnect();
    }
  });
});

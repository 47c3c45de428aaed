/*
 * Property (Redis): the per-group backlog counters maxSize reads (`stats` pending:<g>, see
 * docs/broker-storage.md "Storage (Redis)") equal, after every operation of a seeded random run, the
 * count read from the streams themselves: entries after the group's position that are not in
 * its resolved set. The run mixes pushes, pops, acks (completed, failed, dlq, out of order),
 * seeks (of the queue or of one partition; to the end, to before every message or to a time
 * among them), message deletions, DLQ requeues and evictions.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { parseEnv } from '@herald/config';
import { createRedis, KeyClock, type RedisClient, redisTopologyFrom } from '@herald/redis';
import { seededRandom, stopTestRedis, testRedisEnvironment, uniquePrefix } from '@herald/testkit';
import { brokerSpec } from '../src/config.js';
import type { Broker } from '../src/index.js';
import { client, queueName, startTestBroker } from './helpers.js';

const SEED = Number(process.env.PROPERTY_SEED ?? 20_261_201);
const STEPS = 150;
const PARTITIONS = ['p0', 'p1', 'p2'];
const GROUPS = ['__QUEUE_MODE__', 'g1', 'g2'];

function idAfter(a: string, b: string): boolean {
  const [am, as] = a.split('-').map(BigInt) as [bigint, bigint];
  const [bm, bs] = b.split('-').map(BigInt) as [bigint, bigint];
  return am > bm || (am === bm && as > bs);
}

after(() => stopTestRedis());

describe('backlog counters (redis)', () => {
  let broker: Broker;
  let api: ReturnType<typeof client>;
  let redis: RedisClient;
  /** The broker's clock: evictions move it past maxWaitTimeSeconds. */
  let clock: KeyClock;
  const prefix = uniquePrefix('backlog-prop');
  before(async () => {
    // The suites' Redis on any topology (HERALD_TEST_TOPOLOGY); one slot per queue, the base read below.
    const topology = redisTopologyFrom(parseEnv(brokerSpec, await testRedisEnvironment()));
    if (!topology) throw new Error('no Redis topology for the test');
    redis = createRedis({ topology, connectionName: 'test-backlog' });
    clock = new KeyClock(Date.now(), redis);
    broker = await startTestBroker(
      'redis',
      { BROKER_KEY_PREFIX: prefix, BROKER_REDIS_SLOT_GROUP: 'queue' },
      clock,
    );
    api = client(broker.url);
  });
  after(async () => {
    redis.disconnect();
    await broker.close();
  });

  test(`pending:<g> equals the streams' count after every step (seed ${SEED})`, {
    timeout: 120_000,
  }, async () => {
    const random = seededRandom(SEED);
    const pick = <T>(list: readonly T[]): T => list[Math.floor(random() * list.length)] as T;
    const queue = queueName('backlog-prop');
    const base = `${prefix}{${encodeURIComponent(queue)}}:`;
    await clock.track([base]);
    await api.configure(queue, { retryLimit: 1, leaseTime: 60, maxWaitTimeSeconds: 1 });
    for (const group of GROUPS.slice(1)) await api.pop(queue, `consumerGroup=${group}`);

    async function exact(group: string): Promise<number> {
      const start = (await redis.hget(`${base}groups`, group)) ?? '0-0';
      let count = 0;
      for (const partition of await redis.hkeys(`${base}parts`)) {
        const position = (await redis.hget(`${base}c:${partition}:${group}`, 'pos')) ?? start;
        const resolved = new Set(await redis.smembers(`${base}a:${partition}:${group}`));
        for (const [id] of await redis.xrange(`${base}s:${partition}`, '-', '+')) {
          if (idAfter(id, position) && !resolved.has(id)) count++;
        }
      }
      return count;
    }

    let pushed = 0;
    const started = clock.now();
    const trail: string[] = [];
    /** What the run really did (each kind must happen, or the property says little). */
    const done = {
      completed: 0,
      failed: 0,
      dlq: 0,
      seeks: 0,
      partitionSeeks: 0,
      middleSeeks: 0,
      deleted: 0,
      requeued: 0,
      evicted: 0,
    };
    for (let step = 0; step < STEPS; step++) {
      const roll = random();
      if (roll < 0.35) {
        const items = Array.from({ length: 1 + Math.floor(random() * 4) }, () => ({
          queue,
          partition: pick(PARTITIONS),
          payload: pushed,
          transactionId: `t${pushed++}`,
        }));
        assert.equal((await api.push(items)).status, 201);
        trail.push(`push ${items.length}`);
        // Messages at different times, for seeks to a time between them.
        await clock.advance(1 + Math.floor(random() * 50));
      } else if (roll < 0.75) {
        const group = pick(GROUPS);
        const groupQuery = group === '__QUEUE_MODE__' ? '' : `&consumerGroup=${group}`;
        const popped = await api.pop(queue, `batch=${1 + Math.floor(random() * 4)}${groupQuery}`);
        const messages = popped.status === 200 ? (popped.body.messages as any[]) : [];
        // Answered in a random order, each completed, failed or dead-lettered.
        const order = messages.map((message) => ({ message, key: random() })).sort((x, y) => x.key - y.key);
        for (const { message } of order) {
          const status = pick(['completed', 'completed', 'failed', 'dlq'] as const);
          const reply = await api.ack({
            transactionId: message.transactionId,
            partitionId: message.partitionId,
            leaseId: message.leaseId,
            status,
            ...(group === '__QUEUE_MODE__' ? {} : { consumerGroup: group }),
          });
          if (reply.body[0].success) done[status]++;
        }
        trail.push(`pop ${group} ${messages.length}`);
      } else if (roll < 0.83) {
        const group = pick(GROUPS.slice(1));
        // Before every message, to the end, or to a time among them (a position in the middle).
        const kind = random();
        const body =
          kind < 0.3
            ? { timestamp: 0 }
            : kind < 0.6
              ? { toEnd: true }
              : { timestamp: Math.round(started + random() * (clock.now() - started)) };
        const partition = random() < 0.4 ? pick(PARTITIONS) : undefined;
        const at = partition === undefined ? '' : `/partitions/${partition}`;
        const reply = await api.call(
          'POST',
          `/api/v1/consumer-groups/${group}/queues/${encodeURIComponent(queue)}${at}/seek`,
          body,
        );
        if (reply.status === 200) {
          done.seeks++;
          if (partition !== undefined) done.partitionSeeks++;
          if (kind >= 0.6) done.middleSeeks++;
        }
        trail.push(`seek ${group}${at} ${JSON.stringify(body)}`);
      } else if (roll < 0.9) {
        const listed = await api.call('GET', `/api/v1/messages?queue=${encodeURIComponent(queue)}&limit=50`);
        const messages = (listed.body?.messages ?? []) as any[];
        if (messages.length > 0) {
          const victim = pick(messages);
          const reply = await api.call(
            'DELETE',
            `/api/v1/messages/${victim.partitionId}/${victim.transactionId}`,
          );
          if (reply.status === 200) done.deleted++;
        }
        trail.push('delete message');
      } else if (roll < 0.97) {
        done.requeued += (await api.call('POST', '/api/v1/dlq/requeue', { queue, all: true })).body.requeued;
        trail.push('requeue dlq');
      } else {
        await clock.advance(1001); // past maxWaitTimeSeconds
        done.evicted += await broker.storage.housekeeping.applyRetention();
        trail.push('evict');
      }
      const stats = await redis.hgetall(`${base}stats`);
      for (const group of GROUPS) {
        if (!(await redis.hexists(`${base}groups`, group))) continue;
        assert.equal(
          Number(stats[`pending:${group}`] ?? 0),
          await exact(group),
          `group ${group} after step ${step}: ${trail.slice(-5).join(' | ')}`,
        );
      }
    }
    for (const [kind, count] of Object.entries(done)) assert.ok(count > 0, `the run had no ${kind}`);
  });
});

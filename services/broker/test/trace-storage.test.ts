/*
 * A trace's storage cost is linear in its request (issue #8, defect 2): the entry is kept once
 * and each trace name holds a reference, measured in Redis bytes (MEMORY USAGE of every key
 * the trace wrote), with the entry's data large enough that a copy per name would show.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { createRedis, parseRedisOptions } from '@herald/redis';
import { stopTestRedis, testRedisUrl, uniquePrefix } from '@herald/testkit';
import type { Redis } from 'ioredis';
import type { Broker } from '../src/index.js';
import { LIMITS } from '../src/validation.js';
import { client, startTestBroker } from './helpers.js';

after(() => stopTestRedis());

async function storedBytes(redis: Redis, prefix: string): Promise<number> {
  let total = 0;
  let cursor = '0';
  do {
    const [next, keys] = await redis.scan(cursor, 'MATCH', `${prefix}trace*`, 'COUNT', 1000);
    cursor = next;
    for (const key of keys) total += Number(await redis.memory('USAGE', key, 'SAMPLES', '0'));
  } while (cursor !== '0');
  return total;
}

describe('trace storage (redis)', () => {
  let broker: Broker;
  let redis: Redis;
  const prefix = uniquePrefix('traces');
  before(async () => {
    broker = await startTestBroker('redis', { BROKER_KEY_PREFIX: prefix });
    redis = createRedis(parseRedisOptions(await testRedisUrl(), { connectionName: 'trace-test' }));
  });
  after(async () => {
    redis.disconnect();
    await broker.close();
  });

  test('a trace with the maximum number of names stores its body once', async () => {
    const api = client(broker.url);
    const data = { blob: 'x'.repeat(32 * 1024) };
    const traceNames = Array.from({ length: LIMITS.maxTraceNames }, (_, i) => `name-${i}`);
    const body = { partitionId: 'p', transactionId: 't', data, traceNames };
    const requestBytes = Buffer.byteLength(JSON.stringify(body));
    const reply = await api.call('POST', '/api/v1/traces', body);
    assert.equal(reply.status, 201);
    const stored = await storedBytes(redis, prefix);
    // A copy per name would be ≥ 100 × 32 KiB; one copy plus per-name keys is about the request.
    assert.ok(stored < 3 * requestBytes, `stored ${stored} bytes for a ${requestBytes}-byte request`);
    const named = await api.call('GET', '/api/v1/traces/by-name/name-42');
    assert.equal(named.status, 200);
    assert.equal(named.body.traces.length, 1);
    assert.deepEqual(named.body.traces[0].data, data);
    assert.equal(named.body.traces[0].id, reply.body.traceId);
    const byMessage = await api.call('GET', '/api/v1/traces/p/t');
    assert.equal(byMessage.body.traces[0].id, reply.body.traceId);
  });
});

/*
 * Durability: Redis with appendonly yes / appendfsync always is restarted, then killed -9,
 * while producers push. Every push answered 201 must be found afterwards.
 */
import assert from 'node:assert/strict';
import { EventEmitter, once } from 'node:events';
import { after, before, test } from 'node:test';
import { type Broker, brokerSpec, startBroker } from '@herald/broker';
import { parseEnv } from '@herald/config';
import { RedisServer } from '@herald/testkit';
import { call } from './nodes.js';

/** A liveness bound per phase (200 pushes), not a latency target: failing it names the phase. */
const PHASE_BOUND_MS = 20_000;

let redis: RedisServer;
let broker: Broker;

before(async () => {
  redis = await RedisServer.start({ appendOnly: true });
  broker = await startBroker(
    parseEnv(brokerSpec, {
      PORT: '0',
      HOST: '127.0.0.1',
      LOG_LEVEL: 'silent',
      REDIS_URL: redis.url,
      SHUTDOWN_TIMEOUT: '2000',
    }),
    { fastify: { logger: false } },
  );
});
after(async () => {
  await broker.close();
  await redis.destroy();
});

test('no push answered 201 is lost across a Redis restart and a kill -9', { timeout: 90_000 }, async () => {
  const queue = 'fault.durable';
  const acknowledged = new Set<string>();
  const progress = new EventEmitter();
  let running = true;
  let sent = 0;

  async function producer(id: number): Promise<void> {
    while (running) {
      const transactionId = `p${id}-${sent++}`;
      try {
        const reply = await call(broker.url, 'POST', '/api/v1/push', {
          items: [{ queue, partition: `part-${id % 3}`, transactionId, payload: { transactionId } }],
        });
        if (reply.status === 201) {
          acknowledged.add(transactionId);
          progress.emit('acknowledged');
        }
      } catch {
        // A connection error is not a 201: nothing was promised.
      }
    }
  }

  /** Resolves once `target` pushes were acknowledged; fails naming the phase if they stop coming. */
  const grow = async (target: number, phase: string) => {
    const signal = AbortSignal.timeout(PHASE_BOUND_MS);
    while (acknowledged.size < target) {
      await once(progress, 'acknowledged', { signal }).catch(() => {
        assert.fail(
          `${phase}: ${acknowledged.size} of ${target} pushes acknowledged after ${PHASE_BOUND_MS} ms`,
        );
      });
    }
  };
  const producers = [0, 1, 2, 3].map((id) => producer(id));
  try {
    await grow(200, 'before the restart');
    await redis.restart();
    await grow(acknowledged.size + 200, 'after the restart');
    await redis.kill();
    await redis.launch();
    await grow(acknowledged.size + 200, 'after the kill -9');
  } finally {
    // Also when a phase failed: producers left running would outlive the test.
    running = false;
    await Promise.all(producers);
  }

  const found = new Set<string>();
  for (;;) {
    const reply = await call(
      broker.url,
      'GET',
      `/api/v1/pop/queue/${queue}?consumerGroup=audit&batch=1000&partitions=3&autoAck=true`,
    );
    if (reply.status === 204) break;
    assert.equal(reply.status, 200);
    for (const message of reply.body.messages) found.add(message.transactionId);
  }
  const lost = [...acknowledged].filter((id) => !found.has(id));
  assert.deepEqual(lost, [], `${lost.length} of ${acknowledged.size} acknowledged pushes lost`);
  assert.ok(acknowledged.size >= 600);
});

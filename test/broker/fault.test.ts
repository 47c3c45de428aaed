/*
 * Durability: Redis with appendonly yes / appendfsync always is restarted, then killed -9,
 * while producers push. Every push answered 201 must be found afterwards.
 */
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { type Broker, brokerSpec, startBroker } from '@herald/broker';
import { parseEnv } from '@herald/config';
import { RedisServer } from '@herald/testkit';
import { call } from './nodes.js';

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
  let running = true;
  let sent = 0;

  async function producer(id: number): Promise<void> {
    while (running) {
      const transactionId = `p${id}-${sent++}`;
      try {
        const reply = await call(broker.url, 'POST', '/api/v1/push', {
          items: [{ queue, partition: `part-${id % 3}`, transactionId, payload: { transactionId } }],
        });
        if (reply.status === 201) acknowledged.add(transactionId);
      } catch {
        // A connection error is not a 201: nothing was promised.
      }
    }
  }

  const producers = [0, 1, 2, 3].map((id) => producer(id));
  const grow = async (target: number) => {
    while (acknowledged.size < target) await new Promise((resolve) => setImmediate(resolve));
  };
  await grow(200);
  await redis.restart();
  await grow(acknowledged.size + 200);
  await redis.kill();
  await redis.launch();
  await grow(acknowledged.size + 200);
  running = false;
  await Promise.all(producers);

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

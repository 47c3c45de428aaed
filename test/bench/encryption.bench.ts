/*
 * Payload encryption benchmark: push and pop throughput of a queue with encryptionEnabled against
 * the same work on a queue without it, in the same run, on the same broker and Redis.
 * Run: node --import tsx test/bench/encryption.bench.ts   (build the broker first)
 *
 * One broker in this process (Redis backend, its own Redis), with a key. Per row: `messages`
 * messages spread over PARTITIONS partitions, pushed by CONCURRENCY producers in batches of
 * `batch`, then popped by CONCURRENCY consumers (one partition leased each) with autoAck in
 * batches of 100, each payload parsed by the client. Rows run off, on, off, on, and each figure is
 * the better of its two runs, so a slow moment of the shared machine weighs on neither side
 * alone. `on/off` is the encrypted figure over the clear one. Client and broker share this
 * process, so the table compares the two sides; it is not the broker's ceiling.
 */
import { type Broker, brokerSpec, startBroker } from '@herald/broker';
import { parseEnv } from '@herald/config';
import { RedisServer } from '@herald/testkit';
import { Pool } from 'undici';

const CONCURRENCY = 16;
const PARTITIONS = 16;
const POP_BATCH = 100;
const SMALL = { orderId: 12345, customer: 'c-42', amount: 99.5, items: ['a', 'b', 'c'] };
const LARGE = { blob: 'x'.repeat(4096), ...SMALL };

const redisServer = await RedisServer.start();
const broker: Broker = await startBroker(
  parseEnv(brokerSpec, {
    PORT: '0',
    HOST: '127.0.0.1',
    LOG_LEVEL: 'error',
    REDIS_URL: redisServer.url,
    BROKER_KEY_PREFIX: 'bench:encryption:',
    QUEEN_ENCRYPTION_KEY: '5a'.repeat(32),
  }),
);
const http = new Pool(broker.url, { connections: CONCURRENCY });

async function request(method: 'GET' | 'POST', path: string, body?: unknown) {
  const response = await http.request({
    method,
    path,
    ...(body !== undefined
      ? { body: JSON.stringify(body), headers: { 'content-type': 'application/json' } }
      : {}),
  });
  const text = await response.body.text();
  return { status: response.statusCode, json: text ? JSON.parse(text) : undefined };
}

let runs = 0;
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** msg/s of the push phase and of the pop phase for one queue. */
async function run(encrypted: boolean, payload: unknown, batch: number, messages: number) {
  const queue = `bench.encryption.${runs++}`;
  const configured = await request('POST', '/api/v1/configure', {
    queue,
    options: { encryptionEnabled: encrypted },
  });
  if (configured.status !== 200) throw new Error(`configure ${configured.status}`);
  let next = 0;
  const pushStarted = performance.now();
  await Promise.all(
    Array.from({ length: CONCURRENCY }, async () => {
      while (next < messages) {
        const first = next;
        const count = Math.min(batch, messages - first);
        next += count;
        const items = Array.from({ length: count }, (_, i) => ({
          queue,
          partition: `p${(first + i) % PARTITIONS}`,
          payload,
        }));
        const reply = await request('POST', '/api/v1/push', { items });
        if (reply.status !== 201) throw new Error(`push ${reply.status}`);
      }
    }),
  );
  const pushSeconds = (performance.now() - pushStarted) / 1000;
  let popped = 0;
  const popStarted = performance.now();
  await Promise.all(
    Array.from({ length: CONCURRENCY }, async () => {
      while (popped < messages) {
        const reply = await request('GET', `/api/v1/pop/queue/${queue}?batch=${POP_BATCH}&autoAck=true`);
        if (reply.status === 204) {
          // The others hold the partitions with work: back off instead of spinning on 204s.
          await sleep(5);
          continue;
        }
        if (reply.status !== 200) throw new Error(`pop ${reply.status}`);
        popped += reply.json.messages.length;
      }
    }),
  );
  const popSeconds = (performance.now() - popStarted) / 1000;
  return { push: messages / pushSeconds, pop: messages / popSeconds };
}

try {
  const rows = [];
  const cases = [
    { payload: 'small (90 B)', value: SMALL, batch: 1, messages: 10_000 },
    { payload: 'small (90 B)', value: SMALL, batch: 100, messages: 100_000 },
    { payload: 'large (4.2 KiB)', value: LARGE, batch: 100, messages: 30_000 },
  ];
  for (const { payload, value, batch, messages } of cases) {
    const best = { off: { push: 0, pop: 0 }, on: { push: 0, pop: 0 } };
    for (const encrypted of [false, true, false, true]) {
      const result = await run(encrypted, value, batch, messages);
      const side = encrypted ? best.on : best.off;
      side.push = Math.max(side.push, result.push);
      side.pop = Math.max(side.pop, result.pop);
    }
    rows.push({
      payload,
      'push batch': batch,
      'push off msg/s': Math.round(best.off.push),
      'push on msg/s': Math.round(best.on.push),
      'push on/off': (best.on.push / best.off.push).toFixed(2),
      'pop off msg/s': Math.round(best.off.pop),
      'pop on msg/s': Math.round(best.on.pop),
      'pop on/off': (best.on.pop / best.off.pop).toFixed(2),
    });
  }
  console.log(
    `payload encryption: ${CONCURRENCY} producers then ${CONCURRENCY} consumers (pop batch ${POP_BATCH}, autoAck), ` +
      `${PARTITIONS} partitions, Redis backend, best of two runs per side`,
  );
  console.table(rows);
} finally {
  await http.close();
  await broker.close();
  await redisServer.destroy();
}

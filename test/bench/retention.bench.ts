/*
 * Retention benchmark (issue #9, defect 3): does trimming keep up with the push rate?
 * Run: node --import tsx test/bench/retention.bench.ts   (build the broker first)
 *
 * One broker (in this process, so the run drives retention itself) on its own Redis. Per row,
 * a queue with retentionEnabled and completedRetentionSeconds 1: producers push as fast as
 * they can for the run while consumers pop with autoAck, so every message is resolved, and
 * every second a retention run goes, as the maintenance job does (maintenance.ts), in one of
 * two ways measured in the same process:
 *   one call   one retention script call per queue per run (the scheduling before the fix:
 *              a run deleted at most one batch per partition however much was due)
 *   loop       calls again while work is due, up to RETENTION_RUN_BUDGET_MS (the fix)
 * From the queue's own counters in Redis (`stats`: pushed, size = retained) it prints:
 *   pushed/s     messages pushed per second over the run (the baseline of the row)
 *   trimmed/s    messages deleted per second over the run (pushed - retained at the end)
 *   trim/push    trimmed/s over pushed/s: below 1 only by what the window keeps
 *   retained     at the end of the pushes, and 3 s later (window + two runs)
 *   window       pushed/s x (completedRetentionSeconds + run interval): what retention may keep
 * Trimming keeps up when the retained count stays near the window instead of growing with the run.
 */
import { type Broker, brokerSpec, startBroker } from '@herald/broker';
import { parseEnv } from '@herald/config';
import { RedisServer } from '@herald/testkit';
import { Redis } from 'ioredis';
import { Pool } from 'undici';

const RUN_MS = 20_000;
const RETENTION_INTERVAL_MS = 1000;
const COMPLETED_RETENTION_SECONDS = 1;
const PRODUCERS = 8;
const PUSH_BATCH = 50;
const PAYLOAD = { orderId: 12345, customer: 'c-42', amount: 99.5, items: ['a', 'b', 'c'] };
const PREFIX = 'bench:retention:';

const redisServer = await RedisServer.start();
const broker: Broker = await startBroker(
  parseEnv(brokerSpec, {
    PORT: '0',
    HOST: '127.0.0.1',
    LOG_LEVEL: 'error',
    REDIS_URL: redisServer.url,
    BROKER_KEY_PREFIX: PREFIX,
    // The maintenance job stays out of the way: this run drives retention itself.
    BROKER_RETENTION_INTERVAL: '3600000',
  }),
);
const http = new Pool(broker.url, { connections: 32 });
const redis = new Redis(redisServer.url);

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

/** The queue's counters as the scripts keep them (`stats` in services/broker/lua/README.md, the key layout). */
async function counters(queue: string): Promise<{ pushed: number; retained: number }> {
  const [pushed, size] = await redis.hmget(`${PREFIX}{${encodeURIComponent(queue)}}:stats`, 'pushed', 'size');
  return { pushed: Number(pushed ?? 0), retained: Number(size ?? 0) };
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

type Mode = 'one call' | 'loop';

/** Retention runs every RETENTION_INTERVAL_MS until `stop` resolves (like the job). */
async function retentionDriver(mode: Mode, stopped: () => boolean): Promise<void> {
  while (!stopped()) {
    const started = performance.now();
    // A budget of 0 ends a run after its first round: one script call per queue.
    await broker.storage.housekeeping.applyRetention(mode === 'one call' ? 0 : undefined);
    await sleep(Math.max(0, RETENTION_INTERVAL_MS - (performance.now() - started)));
  }
}

async function scenario(mode: Mode, partitions: number) {
  const queue = `bench.retention.${mode === 'loop' ? 'loop' : 'once'}.${partitions}`;
  const configured = await request('POST', '/api/v1/configure', {
    queue,
    options: { retentionEnabled: true, completedRetentionSeconds: COMPLETED_RETENTION_SECONDS },
  });
  if (configured.status !== 200) throw new Error(`configure ${configured.status}`);
  let finished = false;
  const driver = retentionDriver(mode, () => finished);
  const started = performance.now();
  const until = started + RUN_MS;
  let round = 0;
  const producers = Array.from({ length: PRODUCERS }, async () => {
    while (performance.now() < until) {
      const at = round++;
      const items = Array.from({ length: PUSH_BATCH }, (_, i) => ({
        queue,
        partition: `p${(at * PUSH_BATCH + i) % partitions}`,
        payload: PAYLOAD,
      }));
      const reply = await request('POST', '/api/v1/push', { items });
      if (reply.status !== 201) throw new Error(`push ${reply.status}`);
    }
  });
  let producing = true;
  const consumers = Array.from({ length: Math.max(2, partitions) }, async () => {
    for (;;) {
      const reply = await request(
        'GET',
        `/api/v1/pop/queue/${queue}?batch=1000&wait=true&timeout=200&autoAck=true`,
      );
      if (reply.status === 204 && !producing) return;
    }
  });
  await Promise.all(producers);
  const seconds = (performance.now() - started) / 1000;
  producing = false;
  await Promise.all(consumers);
  const atEnd = await counters(queue);
  await sleep(COMPLETED_RETENTION_SECONDS * 1000 + 2 * RETENTION_INTERVAL_MS);
  const later = await counters(queue);
  finished = true;
  await driver;
  const pushedPerSecond = atEnd.pushed / seconds;
  const trimmedPerSecond = (atEnd.pushed - atEnd.retained) / seconds;
  return {
    retention: mode,
    partitions,
    'pushed/s': Math.round(pushedPerSecond),
    'trimmed/s': Math.round(trimmedPerSecond),
    'trim/push': (trimmedPerSecond / pushedPerSecond).toFixed(3),
    pushed: atEnd.pushed,
    'retained (end)': atEnd.retained,
    'retained (+3 s)': later.retained,
    window: Math.round(pushedPerSecond * (COMPLETED_RETENTION_SECONDS + RETENTION_INTERVAL_MS / 1000)),
  };
}

try {
  const rows = [];
  for (const partitions of [1, 10]) {
    for (const mode of ['one call', 'loop'] as const) rows.push(await scenario(mode, partitions));
  }
  console.log(
    `retention: ${RUN_MS / 1000} s of pushes per row, all consumed (autoAck), completedRetentionSeconds ` +
      `${COMPLETED_RETENTION_SECONDS}, a retention run every ${RETENTION_INTERVAL_MS} ms`,
  );
  console.table(rows);
} finally {
  await http.close();
  redis.disconnect();
  await broker.close();
  await redisServer.destroy();
}

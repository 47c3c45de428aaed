/*
 * What BROKER_MIN_REPLICAS_ACK costs (docs/broker-topologies.md, "Replica acknowledgement"): pushes per
 * second with 0 (the baseline: answer once the primary applied the write) and 1 (answer after
 * WAIT 1), in the same run, on one Sentinel set of 1 primary and 2 replicas on this machine.
 * Run: node --import tsx test/bench/replica-ack.bench.ts   (build the broker first)
 *
 * Two broker nodes (child processes), one per setting, on the same Redis with their own key
 * prefixes; 16 producers per row through an undici keep-alive Pool, each reading every reply.
 * Rows run off, on, off, on per batch size; each figure is the better of its two runs. A push
 * answered 503 (too few replicas in time, or Redis unreachable) is retried as a client would and
 * counted in `503s` (summed over both runs).
 */
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { fileURLToPath } from 'node:url';
import { freePort, RedisSentinelSet, waitFor } from '@herald/testkit';
import { Pool } from 'undici';

const MAIN = fileURLToPath(new URL('../../services/broker/dist/main.js', import.meta.url));
const CONCURRENCY = 16;
/** Messages pushed per row, by batch size (a fixed workload). */
const MESSAGES: Record<number, number> = { 1: 8_000, 100: 100_000 };
const PAYLOAD = { orderId: 12345, customer: 'c-42', amount: 99.5, items: ['a', 'b', 'c'] };

const set = await RedisSentinelSet.start({ replicas: 2 });

async function startNode(minReplicasAck: number) {
  const port = await freePort();
  const child = spawn(process.execPath, [MAIN], {
    env: {
      PATH: process.env.PATH ?? '',
      PORT: String(port),
      HOST: '127.0.0.1',
      LOG_LEVEL: 'error',
      REDIS_SENTINELS: set.sentinels.join(','),
      REDIS_SENTINEL_MASTER: set.masterName,
      BROKER_KEY_PREFIX: `bench-replica-ack-${minReplicasAck}:`,
      BROKER_MIN_REPLICAS_ACK: String(minReplicasAck),
    },
    stdio: ['ignore', 'ignore', 'inherit'],
  });
  const base = `http://127.0.0.1:${port}`;
  await waitFor(async () => (await fetch(`${base}/readyz`)).status === 200, { what: 'broker' });
  return { child, pool: new Pool(base, { connections: CONCURRENCY }) };
}

const brokerNodes: Awaited<ReturnType<typeof startNode>>[] = [];
async function stopAll(): Promise<void> {
  for (const { child, pool } of brokerNodes) {
    await pool.close();
    if (child.exitCode === null && child.signalCode === null) {
      child.kill('SIGTERM');
      await once(child, 'exit');
    }
  }
  await set.stop();
}

const refusals = { 0: 0, 1: 0 };

async function pushRow(minReplicasAck: 0 | 1, batch: number, round: number): Promise<number> {
  const node = brokerNodes[minReplicasAck];
  if (!node) throw new Error(`no broker with BROKER_MIN_REPLICAS_ACK=${minReplicasAck}`);
  const { pool } = node;
  const requests = (MESSAGES[batch] as number) / batch;
  const queue = `bench-${batch}-${round}`;
  let next = 0;
  const started = performance.now();
  await Promise.all(
    Array.from({ length: CONCURRENCY }, async () => {
      for (let index = next++; index < requests; index = next++) {
        const items = Array.from({ length: batch }, (_, position) => ({
          queue,
          partition: `p${index % 16}`,
          transactionId: `t-${index}-${position}`,
          payload: PAYLOAD,
        }));
        for (;;) {
          const response = await pool.request({
            method: 'POST',
            path: '/api/v1/push',
            body: JSON.stringify({ items }),
            headers: { 'content-type': 'application/json' },
          });
          await response.body.text();
          if (response.statusCode === 201) break;
          if (response.statusCode !== 503) throw new Error(`push answered ${response.statusCode}`);
          refusals[minReplicasAck]++;
        }
      }
    }),
  );
  return (MESSAGES[batch] as number) / ((performance.now() - started) / 1000);
}

try {
  // Index = BROKER_MIN_REPLICAS_ACK.
  for (const minReplicasAck of [0, 1]) brokerNodes.push(await startNode(minReplicasAck));
  const format = (value: number) => Math.round(value).toLocaleString('en-US');
  console.log(
    `node ${process.version}; Sentinel set: 1 primary, 2 replicas, 3 sentinels; ${CONCURRENCY} producers`,
  );
  console.log('| push batch | N=0 msg/s | N=1 msg/s | N=1/N=0 | N=0 503s | N=1 503s |');
  console.log('|---|---|---|---|---|---|');
  for (const batch of [1, 100]) {
    const best = { 0: 0, 1: 0 };
    refusals[0] = 0;
    refusals[1] = 0;
    for (let round = 0; round < 2; round++) {
      for (const minReplicasAck of [0, 1] as const) {
        best[minReplicasAck] = Math.max(best[minReplicasAck], await pushRow(minReplicasAck, batch, round));
      }
    }
    console.log(
      `| ${batch} | ${format(best[0])} | ${format(best[1])} | ${(best[1] / best[0]).toFixed(2)} | ${refusals[0]} | ${refusals[1]} |`,
    );
  }
} finally {
  await stopAll();
}

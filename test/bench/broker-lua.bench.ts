/*
 * The broker's Lua scripts against a baseline version of them, in the same run: two
 * RedisStorage instances on one Redis (own key prefixes), one loading services/broker/lua as
 * checked out, one loading the same directory at a git revision. No HTTP: each round pushes
 * 100 messages to one partition, pops them (batch 100) and acks them (one batch of 100), one
 * call at a time, alternating the two script sets round by round so load from other processes
 * hits both alike. Prints the median and p90 time per call and the ratio current/baseline, and
 * the median time Redis spent in the call's script (INFO commandstats, reset before each call:
 * the script's own time, without the node's encoding, the reply's parsing and the round trip).
 * Run: node --import tsx test/bench/broker-lua.bench.ts [git revision, default main]
 * Both sets are called by the node code as checked out, so the revision's scripts must take the
 * same arguments and answer in the same shape: pop and ack changed both at 84a1a8c (flat pop rows,
 * runs of acks); compare revisions from that commit on.
 */
import type { BrokerStorage } from '@herald/broker';
import { luaRevisionBench } from './lua-revision.js';

const ROUNDS = 300;
const BATCH = 100;
const PAYLOAD = JSON.stringify({ orderId: 12345, customer: 'c-42', amount: 99.5, items: ['a', 'b', 'c'] });
const revision = process.argv[2] ?? 'main';
const bench = await luaRevisionBench(revision);
type Times = Record<'push' | 'pop' | 'ack', { call: number[]; script: number[] }>;
const emptyTimes = (): Times => ({
  push: { call: [], script: [] },
  pop: { call: [], script: [] },
  ack: { call: [], script: [] },
});
const variants: { label: string; storage: BrokerStorage; times: Times }[] = [
  { label: revision, storage: bench.storage('revision'), times: emptyTimes() },
  { label: 'current', storage: bench.storage('current'), times: emptyTimes() },
];

async function timedCall<T>(times: { call: number[]; script: number[] }, call: () => Promise<T>): Promise<T> {
  const { result, callMs, scriptMs } = await bench.timed(call);
  times.call.push(callMs);
  times.script.push(scriptMs);
  return result;
}

async function round(variant: (typeof variants)[number], index: number): Promise<void> {
  const { storage, times } = variant;
  const partition = `p${index % 10}`;
  await timedCall(times.push, () =>
    storage.queues.push(
      Array.from({ length: BATCH }, (_, i) => ({
        queue: 'bench',
        partition,
        transactionId: `t${index}-${i}`,
        messageId: `m${index}-${i}`,
        traceId: null,
        data: PAYLOAD,
        producerSub: null,
      })),
    ),
  );
  const popped = await timedCall(times.pop, () =>
    storage.queues.pop({
      queue: 'bench',
      partition,
      group: '__QUEUE_MODE__',
      batch: BATCH,
      maxPartitions: 1,
      leaseId: `lease-${index}`,
      subscription: { mode: 'all' },
    }),
  );
  const [leased] = popped.partitions;
  if (!leased || leased.messages.length !== BATCH) throw new Error(`${variant.label}: pop returned too few`);
  const results = await timedCall(times.ack, () =>
    storage.queues.ack(
      leased.messages.map((message) => ({
        transactionId: message.transactionId,
        partitionId: leased.partitionId,
        status: 'completed' as const,
        group: '__QUEUE_MODE__',
        leaseId: leased.leaseId,
        error: null,
      })),
    ),
  );
  if (results.some((result) => !result.success)) throw new Error(`${variant.label}: an ack failed`);
}

for (let index = 0; index < ROUNDS; index++) {
  for (const variant of index % 2 === 0 ? variants : [...variants].reverse()) await round(variant, index);
}

const quantile = (values: number[], q: number) => {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))] as number;
};
const [baseline, current] = variants as [(typeof variants)[number], (typeof variants)[number]];
console.log(
  `| call (batch ${BATCH}) | ${revision} median / p90 ms | current median / p90 ms | current/${revision} (median) | script in Redis, ${revision} / current median ms | current/${revision} |`,
);
console.log('|---|---|---|---|---|---|');
for (const call of ['push', 'pop', 'ack'] as const) {
  const before = baseline.times[call];
  const after = current.times[call];
  const median = (values: number[]) => quantile(values, 0.5);
  console.log(
    `| ${call} | ${median(before.call).toFixed(3)} / ${quantile(before.call, 0.9).toFixed(3)} | ${median(after.call).toFixed(3)} / ${quantile(after.call, 0.9).toFixed(3)} | ${(median(after.call) / median(before.call)).toFixed(2)}x | ${median(before.script).toFixed(3)} / ${median(after.script).toFixed(3)} | ${(median(after.script) / median(before.script)).toFixed(2)}x |`,
  );
}

await bench.close();

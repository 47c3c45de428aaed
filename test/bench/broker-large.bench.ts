/*
 * The broker's scripts on large messages against a baseline version of them, in the same run
 * (as broker-lua.bench.ts does for small ones): two RedisStorage instances on one private
 * Redis, one loading services/broker/lua as checked out, one the same directory at a git
 * revision. Each round gives each a fresh queue of MESSAGES messages of 1 MiB on one partition,
 * then times, in Redis (INFO commandstats, reset before each call: the scripts' own time):
 *  - the partitions view (queue detail) with the backlog, after a first pop;
 *  - acks out of order: the lease's messages but the first in one batch, then the first;
 *  - retention of the whole queue once it is consumed (every call of one applyRetention);
 *  - the stats job's second run over a queue of WAITING partitions, one message of 1 MiB each,
 *    that nobody consumes (every queue's stats script);
 *  - the same messages leased, an hour before their retention: a retention run one second after
 *    a first one.
 * The order of the two alternates round by round. Prints the median of ROUNDS rounds.
 * Run on a quiet machine: node --import tsx test/bench/broker-large.bench.ts [revision, default main]
 */
import { setTimeout as sleep } from 'node:timers/promises';
import type { BrokerStorage } from '@herald/broker';
import { compareSteps, luaRevisionBench, type RevisionVariant } from './lua-revision.js';

const ROUNDS = 3;
const MESSAGES = 64;
const MIB = 1024 * 1024;
const WAITING = 16;
const GROUP = '__QUEUE_MODE__';
const revision = process.argv[2] ?? 'main';
// The baseline's calls may take seconds: measured, not refused.
const bench = await luaRevisionBench(revision, { commandTimeoutMs: 120_000 });

const STEPS = [
  'partitions view',
  'ack ahead of the first',
  'ack of the first',
  'retention',
  `stats, second run (${WAITING} waiting)`,
  `retention, ${WAITING} leased a second later`,
] as const;
type Step = (typeof STEPS)[number];

/** The scripts' time in Redis (ms) during `call`. */
async function scriptTime(times: number[], call: () => Promise<unknown>): Promise<void> {
  times.push((await bench.timed(call)).scriptMs);
}

async function pop(storage: BrokerStorage, queue: string, index: number) {
  const popped = await storage.queues.pop({
    queue,
    partition: 'p',
    group: GROUP,
    batch: 100,
    maxPartitions: 1,
    leaseId: `lease-${queue}-${index}`,
    subscription: { mode: 'all' },
  });
  return popped.partitions[0];
}

const acksOf = (leased: NonNullable<Awaited<ReturnType<typeof pop>>>) =>
  leased.messages.map((message) => ({
    transactionId: message.transactionId,
    partitionId: leased.partitionId,
    status: 'completed' as const,
    group: GROUP,
    leaseId: leased.leaseId,
    error: null,
  }));

async function round(variant: RevisionVariant<Step>, index: number): Promise<void> {
  const { storage, times } = variant;
  const queue = `large-${variant.label}-${index}`.replace(/[^\w-]/g, '-');
  await storage.catalog.configure(
    queue,
    { retentionEnabled: true, completedRetentionSeconds: 1 },
    { namespace: '', task: '' },
  );
  for (let start = 0; start < MESSAGES; start += 4) {
    await storage.queues.push(
      Array.from({ length: 4 }, (_, offset) => ({
        queue,
        partition: 'p',
        transactionId: `t${start + offset}`,
        messageId: `m${start + offset}`,
        traceId: null,
        data: JSON.stringify({ n: start + offset, blob: 'x'.repeat(MIB) }),
        producerSub: null,
      })),
    );
  }
  const leased = await pop(storage, queue, 0);
  if (!leased) throw new Error(`${variant.label}: the first pop found nothing`);
  await scriptTime(times['partitions view'], () => storage.groups.partitions(queue));
  const [first, ...rest] = acksOf(leased);
  await scriptTime(times['ack ahead of the first'], () => storage.queues.ack(rest));
  await scriptTime(times['ack of the first'], () => storage.queues.ack([first as (typeof rest)[number]]));
  let consumed = leased.messages.length;
  for (let next = 1; consumed < MESSAGES; next++) {
    const more = await pop(storage, queue, next);
    if (!more) throw new Error(`${variant.label}: pop ${next} found nothing at ${consumed}`);
    await storage.queues.ack(acksOf(more));
    consumed += more.messages.length;
  }
  await sleep(1100);
  let deleted = 0;
  await scriptTime(times.retention, async () => {
    deleted = await storage.housekeeping.applyRetention(600_000);
  });
  if (deleted !== MESSAGES) throw new Error(`${variant.label}: retention deleted ${deleted} of ${MESSAGES}`);

  // A queue whose group has WAITING partitions of one large message each, none consumed.
  const waiting = `${queue}-waiting`;
  const item = (partition: string) => ({
    queue: waiting,
    partition,
    transactionId: partition,
    messageId: `${waiting}-${partition}`,
    traceId: null,
    data: JSON.stringify({ blob: 'x'.repeat(MIB) }),
    producerSub: null,
  });
  await storage.queues.push([item('first')]);
  const opened = await storage.queues.pop({
    queue: waiting,
    partition: 'first',
    group: GROUP,
    batch: 1,
    maxPartitions: 1,
    leaseId: `lease-${waiting}`,
    subscription: { mode: 'all' },
  });
  if (!opened.partitions[0]) throw new Error(`${variant.label}: the waiting queue's first pop found nothing`);
  await storage.queues.ack(acksOf(opened.partitions[0]));
  for (let partition = 0; partition < WAITING; partition++)
    await storage.queues.push([item(`w${partition}`)]);
  await storage.housekeeping.refreshStats();
  await scriptTime(times[STEPS[4]], () => storage.housekeeping.refreshStats());

  // The same messages leased, an hour before their retention: a retention run a second after one
  // that looked at them.
  await storage.catalog.configure(
    waiting,
    { retentionEnabled: true, retentionSeconds: 3600, leaseTime: 600 },
    { namespace: '', task: '' },
  );
  // A pop answers at most 16 MiB: two pops.
  let leasedParts = 0;
  for (let attempt = 0; leasedParts < WAITING && attempt < 4; attempt++) {
    const held = await storage.queues.pop({
      queue: waiting,
      partition: undefined,
      group: GROUP,
      batch: WAITING,
      maxPartitions: WAITING,
      leaseId: `lease-${waiting}-held-${attempt}`,
      subscription: { mode: 'all' },
    });
    leasedParts += held.partitions.length;
  }
  if (leasedParts !== WAITING)
    throw new Error(`${variant.label}: ${leasedParts} of ${WAITING} partitions leased`);
  await storage.housekeeping.applyRetention(600_000);
  await sleep(1100);
  await scriptTime(times[STEPS[5]], () => storage.housekeeping.applyRetention(600_000));
  // Its 16 MiB would stay in Redis for the rounds after.
  await storage.catalog.delete(waiting);
}

await compareSteps(
  bench,
  revision,
  STEPS,
  { rounds: ROUNDS, about: `${MESSAGES} messages of 1 MiB`, column: 'step (scripts)' },
  round,
);
await bench.close();

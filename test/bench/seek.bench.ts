/*
 * Seeks on a long backlog against a baseline version of the scripts, in the same run (the
 * scripts at a git revision: lua-revision.ts). A seek sets the group's backlog count to what is
 * left after its new positions; Redis has no count of a stream range, so the scripts read
 * entries for it, in one script call while Redis serves nobody else. Each round gives each
 * version a fresh queue of MESSAGES messages of 256 bytes on PARTITIONS partitions, pushed in
 * ten slices a little apart in time, and times in Redis (INFO commandstats) one after another:
 *  - a new group, to before every message (`{timestamp: 0}`);
 *  - one partition to its end;
 *  - every partition to its end;
 *  - every partition to the time the first slice was pushed (10% of the messages before it);
 *  - every partition to the time six slices were pushed (40% after it).
 * The order of the two alternates round by round. Prints the median of ROUNDS rounds.
 * Run on a quiet machine: node --import tsx test/bench/seek.bench.ts [revision, default main]
 */
import { setTimeout as sleep } from 'node:timers/promises';
import type { BrokerStorage } from '@herald/broker';
import { compareSteps, luaRevisionBench, type RevisionVariant } from './lua-revision.js';

const ROUNDS = 3;
const MESSAGES = 200_000;
const PARTITIONS = 2;
const SLICES = 10;
const BATCH = 1000;
const revision = process.argv[2] ?? 'main';
// The baseline's calls may take seconds: measured, not refused.
const bench = await luaRevisionBench(revision, { commandTimeoutMs: 120_000 });

const STEPS = [
  'new group, to before every message',
  'one partition to its end',
  'every partition to its end',
  'to the time 10% in',
  'to the time 60% in',
] as const;
type Step = (typeof STEPS)[number];

/** Pushes the queue's messages in SLICES slices; the time after each. */
async function fill(storage: BrokerStorage, queue: string): Promise<number[]> {
  const after: number[] = [];
  const perSlice = MESSAGES / SLICES;
  for (let slice = 0; slice < SLICES; slice++) {
    for (let start = 0; start < perSlice; start += BATCH) {
      await storage.queues.push(
        Array.from({ length: BATCH }, (_, offset) => {
          const n = slice * perSlice + start + offset;
          return {
            queue,
            partition: `p${n % PARTITIONS}`,
            transactionId: `t${n}`,
            messageId: `${queue}-m${n}`,
            traceId: null,
            data: JSON.stringify({ n, blob: 'x'.repeat(240) }),
            producerSub: null,
          };
        }),
      );
    }
    await sleep(5);
    after.push(Date.now());
    await sleep(5);
  }
  return after;
}

async function round(variant: RevisionVariant<Step>, index: number): Promise<void> {
  const { storage, times } = variant;
  const queue = `seek-${variant.label}-${index}`.replace(/[^\w-]/g, '-');
  await storage.catalog.configure(queue, {}, { namespace: '', task: '' });
  const sliceTimes = await fill(storage, queue);
  const seek = async (
    step: Step,
    partition: string | undefined,
    target: Parameters<BrokerStorage['groups']['seek']>[3],
  ) => {
    const { result, scriptMs } = await bench.timed(() => storage.groups.seek(queue, 'g', partition, target));
    const expected = partition === undefined ? PARTITIONS : 1;
    if (result !== expected) throw new Error(`${variant.label}: ${step} moved ${result} partitions`);
    times[step].push(scriptMs);
  };
  await seek(STEPS[0], undefined, { timestamp: 0 });
  await seek(STEPS[1], 'p0', { toEnd: true });
  await seek(STEPS[2], undefined, { toEnd: true });
  await seek(STEPS[3], undefined, { timestamp: sliceTimes[0] as number });
  await seek(STEPS[4], undefined, { timestamp: sliceTimes[5] as number });
  await storage.catalog.delete(queue);
}

await compareSteps(
  bench,
  revision,
  STEPS,
  {
    rounds: ROUNDS,
    about: `${MESSAGES} messages of 256 bytes on ${PARTITIONS} partitions`,
    column: 'seek (script)',
  },
  round,
);
await bench.close();

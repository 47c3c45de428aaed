import type { RedisClient } from '@herald/redis';
import type { RedisBackend } from './context.js';

/*
 * Retention and eviction (docs/broker-api.md "Queue options", as Queen's retention and eviction
 * services apply them). Per queue, a message is deleted, with its dedup entry:
 *  - completed: every consumer group resolved it and it is older than
 *    completedRetentionSeconds, only when retentionEnabled and completedRetentionSeconds > 0;
 *  - expired: older than retentionSeconds (consumed or not), only when retentionEnabled and
 *    retentionSeconds > 0; older than ttl (it would never be delivered anyway);
 *  - evicted: older than maxWaitTimeSeconds and still waiting for some group, whatever
 *    retentionEnabled (deleted, not dead-lettered).
 * The scripts only visit partitions queued in the per-queue `trim` index (a push, an ack or a
 * configure schedules them), never every partition, and delete a bounded batch per call; a
 * run calls again while work is due so trimming keeps up with the push rate
 * (docs/benchmarks.md "Retention"). The embedded default runs these same scripts.
 */

/** How long one retention run may keep calling while work remains (then the next run goes on). */
export const RETENTION_RUN_BUDGET_MS = 2000;

/** Per call of the retention script: partitions visited, entries per partition, entries in all. */
const RETENTION_BATCH = { partitions: 100, perPartition: 2000, perCall: 5000 } as const;

/** Runs lua/retention-1.lua over every queue while work is due, up to `budgetMs`; returns the messages deleted. */
export async function applyRetention(backend: RedisBackend, budgetMs: number): Promise<number> {
  const { partitions, perPartition, perCall } = RETENTION_BATCH;
  return retentionRounds(await backend.registry.queueNames(), budgetMs, async (queue) => {
    const base = backend.base(queue);
    const args = [partitions, perPartition, perCall];
    const [deleted, more] = await backend.run<[number, number]>('retention', [base], args);
    return { deleted: Number(deleted), more: Number(more) === 1 };
  });
}

/**
 * Runs `once` for every queue, then again for those that answered `more` (work still due),
 * until none has more or `budgetMs` has passed. Returns the number of messages deleted.
 */
async function retentionRounds(
  queues: readonly string[],
  budgetMs: number,
  once: (queue: string) => Promise<{ deleted: number; more: boolean }>,
): Promise<number> {
  // Work time spent, not the storage's clock: a test clock standing still must not run forever.
  const deadline = performance.now() + budgetMs;
  let deleted = 0;
  let due = queues;
  while (due.length > 0) {
    const again: string[] = [];
    for (const queue of due) {
      const round = await once(queue);
      deleted += round.deleted;
      if (round.more) again.push(queue);
    }
    if (performance.now() >= deadline) break;
    due = again;
  }
  return deleted;
}

/**
 * Makes every partition of a queue due for retention now: after configure, the new options
 * apply to messages already stored (push and ack only schedule what they touch).
 * Resend-safe: ZADD of the same members.
 */
export async function scheduleAllPartitions(redis: RedisClient, base: string, now: number): Promise<void> {
  const partitions = await redis.hkeys(`${base}parts`);
  for (let start = 0; start < partitions.length; start += 1000) {
    const chunk = partitions.slice(start, start + 1000);
    await redis.zadd(`${base}trim`, ...chunk.flatMap((partition) => [now, partition]));
  }
}

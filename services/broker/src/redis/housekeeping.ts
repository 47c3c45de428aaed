/*
 * The periodic jobs' work on Redis (the Housekeeping role; maintenance.ts schedules it, one node
 * at a time): lease expiry (lua/sweep-leases-1.lua), retention and eviction (lua/retention-1.lua)
 * and the stats snapshot (lua/stats-1.lua, kept in one global hash every node's /metrics reads).
 *
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
 * (docs/benchmarks.md "Retention").
 */
import { namespaceAndTask, streamIdTime } from '../identifiers.js';
import type { Housekeeping, LeaseSweep, QueueStats } from '../storage.js';
import { forEachBounded, QUEUES_IN_FLIGHT } from './bounded.js';
import { decode, type RedisBackend } from './context.js';

/** How long one retention run may keep calling while work remains (then the next run goes on). */
export const RETENTION_RUN_BUDGET_MS = 2000;

/** Per call of the retention script: partitions visited, entries per partition, entries in all. */
const RETENTION_BATCH = { partitions: 100, perPartition: 2000, perCall: 5000 } as const;

/** Leases a sweep expires per queue and script call. */
const SWEEP_BATCH = 1000;

/** Ready partitions sampled per group for the oldest pending age (lua/stats-1.lua ARGV[1]). */
const STATS_SAMPLE = 50;
/** Active leases a stats run reads per queue to count `processing` (messages under lease). */
const STATS_LEASES_READ = 10_000;

type StatsReply = [
  number,
  number,
  number,
  number,
  number,
  string,
  number,
  [string, number, number, number, string, string][],
  string,
  number,
  number,
];

export class RedisHousekeeping implements Housekeeping {
  constructor(private readonly backend: RedisBackend) {}

  /** Expires every lease past its time, queue by queue (a pop also expires the ones it meets). */
  async sweepLeases(): Promise<LeaseSweep> {
    const { backend } = this;
    const expired: { queue: string; count: number }[] = [];
    for (const queue of await backend.registry.queueNames()) {
      const base = backend.base(queue);
      const [count] = await backend.run<[number, string[]]>('sweep-leases', [base], [SWEEP_BATCH]);
      if (count > 0) expired.push({ queue, count });
    }
    backend.notifications.notify(expired.map(({ queue }) => queue));
    return { expired };
  }

  /** Runs lua/retention-1.lua over every queue while work is due, up to `budgetMs`; returns the messages deleted. */
  async applyRetention(budgetMs = RETENTION_RUN_BUDGET_MS): Promise<number> {
    const { backend } = this;
    const { partitions, perPartition, perCall } = RETENTION_BATCH;
    return retentionRounds(await backend.registry.queueNames(), budgetMs, async (queue) => {
      const base = backend.base(queue);
      const args = [partitions, perPartition, perCall];
      const [deleted, more] = await backend.run<[number, number]>('retention', [base], args);
      return { deleted: Number(deleted), more: Number(more) === 1 };
    });
  }

  async refreshStats(): Promise<QueueStats[]> {
    const { backend } = this;
    const previous = new Map((await this.cachedStats()).map((stats) => [stats.queue, stats]));
    const queues = await backend.registry.queueNames();
    // In the registry's order whatever script answers first.
    const rows: (QueueStats | undefined)[] = new Array(queues.length);
    await forEachBounded(queues, QUEUES_IN_FLIGHT, async (queue, index) => {
      const base = backend.base(queue);
      const [
        [pushed, retained, dlq, expiries, partitions, oldest, leases, groups, now, batch, answered],
        configured,
      ] = await Promise.all([
        backend.run<StatsReply>('stats', [base], [STATS_SAMPLE, STATS_LEASES_READ]),
        backend.redis.hmget(`${base}cfg`, 'namespace', 'task', 'createdAt'),
      ]);
      // Registered by a push or transaction that was refused before the queue was created:
      // no queue (the catalog answers none either), no stats.
      if (configured[2] === null) return;
      // The names configure gave, as the catalog answers them (the queue name's parts otherwise).
      const fromName = namespaceAndTask(queue);
      const names = { namespace: configured[0] || fromName.namespace, task: configured[1] || fromName.task };
      const groupStats = groups.map(([group, resolved, backlog, withLag, groupOldest, start]) => ({
        group: decode(group),
        resolved: Number(resolved),
        lag: Math.max(0, Number(backlog)),
        partitionsWithLag: Number(withLag),
        oldestPendingAt: Number(groupOldest),
        // A start position is '<ms-1>-<max>' (queue-store.ts pop), '0-0' for all history.
        subscribedAt: start === '0-0' ? 0 : streamIdTime(start) + 1,
      }));
      const pending = groupStats.length === 0 ? Number(retained) : Math.max(...groupStats.map((g) => g.lag));
      const oldestMs = Number(oldest);
      rows[index] = {
        queue,
        namespace: names.namespace,
        task: names.task,
        partitions: Number(partitions),
        pushed: Number(pushed),
        retained: Number(retained),
        pending,
        oldestPendingAgeSeconds:
          oldestMs === 0 || pending === 0 ? 0 : Math.max(0, (Number(now) - oldestMs) / 1000),
        leasedMessages: Number(batch),
        leasedAnswered: Number(answered),
        deadLetters: Number(dlq),
        leaseExpiries: Number(expiries),
        activeLeases: Number(leases),
        ...snapshotRates(previous.get(queue), Number(pushed), groupStats, Number(now)),
        groups: groupStats,
        at: Number(now),
      };
    });
    const snapshot = rows.filter((row): row is QueueStats => row !== undefined);
    await backend.run(
      'stats-save',
      [backend.key('stats')],
      snapshot.flatMap((entry) => [entry.queue, JSON.stringify(entry)]),
    );
    return snapshot;
  }

  /** The last snapshot any node wrote (cheap: what /metrics reads). */
  async cachedStats(): Promise<QueueStats[]> {
    const hash = await this.backend.redis.hgetall(this.backend.key('stats'));
    return Object.values(hash).map((text) => JSON.parse(text) as QueueStats);
  }
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

/** Per-second rates between two snapshots of one queue (0 without an earlier one). */
export function snapshotRates(
  previous: QueueStats | undefined,
  pushed: number,
  groups: readonly { resolved: number }[],
  at: number,
): { pushedPerSecond: number; resolvedPerSecond: number } {
  const seconds = previous ? (at - previous.at) / 1000 : 0;
  if (!previous || seconds <= 0) return { pushedPerSecond: 0, resolvedPerSecond: 0 };
  const resolved = groups.reduce((total, g) => total + g.resolved, 0);
  const before = (previous.groups ?? []).reduce((total, g) => total + g.resolved, 0);
  return {
    pushedPerSecond: Math.max(0, (pushed - previous.pushed) / seconds),
    resolvedPerSecond: Math.max(0, (resolved - before) / seconds),
  };
}

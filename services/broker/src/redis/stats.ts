/*
 * Queue statistics on the Redis backend: lua/stats-1.lua per queue, the snapshot kept in one
 * global hash (`stats`) that every node's /metrics reads.
 */
import { namespaceAndTask, streamIdTime } from '../identifiers.js';
import { type PartitionState, type QueueStats, snapshotRates } from '../storage.js';
import { LIMITS } from '../validation.js';
import { forEachBounded, QUEUES_IN_FLIGHT } from './bounded.js';
import { decode, type RedisBackend } from './context.js';

/** Ready partitions sampled per group for the oldest pending age (lua/stats-1.lua ARGV[1]). */
const STATS_SAMPLE = 50;
/** Active leases a stats run reads per queue to count `processing` (messages under lease). */
const STATS_LEASES_READ = 10_000;

export async function refreshStats(backend: RedisBackend): Promise<QueueStats[]> {
  const previous = new Map((await cachedStats(backend)).map((stats) => [stats.queue, stats]));
  const queues = await backend.registry.queueNames();
  // In the registry's order whatever script answers first.
  const rows: (QueueStats | undefined)[] = new Array(queues.length);
  await forEachBounded(queues, QUEUES_IN_FLIGHT, async (queue, index) => {
    const base = backend.base(queue);
    const [
      [pushed, retained, dlq, expiries, partitions, oldest, leases, groups, now, batch, answered],
      configured,
    ] = await Promise.all([
      backend.run<
        [
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
        ]
      >('stats', [base], [STATS_SAMPLE, STATS_LEASES_READ]),
      backend.redis.hmget(`${base}cfg`, 'namespace', 'task', 'createdAt'),
    ]);
    // Registered by a push or transaction that was refused before the queue was created:
    // no queue (getQueue answers none either), no stats.
    if (configured[2] === null) return;
    // The names configure gave, as getQueue answers them (the queue name's parts otherwise).
    const fromName = namespaceAndTask(queue);
    const names = { namespace: configured[0] || fromName.namespace, task: configured[1] || fromName.task };
    const groupStats = groups.map(([group, resolved, backlog, withLag, groupOldest, start]) => ({
      group: decode(group),
      resolved: Number(resolved),
      lag: Math.max(0, Number(backlog)),
      partitionsWithLag: Number(withLag),
      oldestPendingAt: Number(groupOldest),
      // A start position is '<ms-1>-<max>' (redis/pop.ts), '0-0' for all history.
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
  const statsKey = backend.key('stats');
  const pipeline = backend.redis.multi().del(statsKey);
  for (const entry of snapshot) pipeline.hset(statsKey, entry.queue, JSON.stringify(entry));
  await pipeline.exec();
  return snapshot;
}

/** The last snapshot any node wrote (cheap: what /metrics reads). */
export async function cachedStats(backend: RedisBackend): Promise<QueueStats[]> {
  const hash = await backend.redis.hgetall(backend.key('stats'));
  return Object.values(hash).map((text) => JSON.parse(text) as QueueStats);
}

/** Per-partition state of a queue's detailed views (lua/partitions-1.lua, bounded by LIMITS). */
export async function partitionStates(backend: RedisBackend, queue: string): Promise<PartitionState[]> {
  const base = backend.base(queue);
  const rows = await backend.run<
    [string, string, number, string, string, number, [string, number, string, number, number][]][]
  >(
    'partitions',
    [base],
    [
      LIMITS.maxDetailedPartitions,
      LIMITS.partitionLagCount,
      LIMITS.partitionDeadLettersRead,
      LIMITS.detailedViewCountBudget,
    ],
  );
  return rows.map(([partition, partitionId, retained, oldestAt, newestAt, deadLetters, groups]) => ({
    partition: decode(partition),
    partitionId,
    retained: Number(retained),
    oldestAt: Number(oldestAt),
    newestAt: Number(newestAt),
    deadLetters: Number(deadLetters),
    groups: groups.map(([group, lag, oldestPendingAt, leaseActive, leased]) => ({
      group: decode(group),
      lag: Number(lag),
      oldestPendingAt: Number(oldestPendingAt),
      leaseActive: Number(leaseActive) === 1,
      leased: Number(leased),
    })),
  }));
}

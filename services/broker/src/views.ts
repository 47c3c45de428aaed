import { createHash } from 'node:crypto';
import type { GroupStats, PartitionState, QueueInfo, QueueStats } from './storage.js';

/*
 * Queen's JSON shapes for the resource, status and consumer-group views, built from the stats
 * snapshot and the per-partition states (issue #10). Each builder names the stored procedure of
 * Queen's server whose answer it reproduces (`lib/schema/procedures/*.sql` in queen-mq/queen).
 * What Herald does not count answers Queen's own no-data value (0, or null for a time);
 * docs/broker-queen.md "Differences from Queen" lists each such field.
 */

/** Queen's timestamps: `YYYY-MM-DDTHH:MM:SS.mmmZ`; null for "none". */
export function isoOrNull(ms: number): string | null {
  return ms > 0 ? new Date(ms).toISOString() : null;
}

const round2 = (value: number) => Math.round(value * 100) / 100;
const secondsSince = (ms: number, now: number) => (ms > 0 ? Math.max(0, Math.floor((now - ms) / 1000)) : 0);

/** A queue's id: a name-based UUID (SHA-1, version 5 layout), the same on every node. */
export function queueIdOf(queue: string): string {
  const hash = createHash('sha1').update('queue\0').update(queue).digest();
  hash[6] = ((hash[6] as number) & 0x0f) | 0x50;
  hash[8] = ((hash[8] as number) & 0x3f) | 0x80;
  const hex = hash.subarray(0, 16).toString('hex');
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20)}`;
}

/** Queen lists queues newest first (then by name, for a stable order). */
export function newestFirst(a: QueueInfo, b: QueueInfo): number {
  return b.createdAt.localeCompare(a.createdAt) || (a.name < b.name ? -1 : a.name > b.name ? 1 : 0);
}

/** Messages under lease not answered yet: Queen's `processing`. */
export function processingOf(stats: QueueStats | undefined): number {
  return stats ? Math.max(0, (stats.leasedMessages ?? 0) - (stats.leasedAnswered ?? 0)) : 0;
}

/**
 * One queue of a list: get_queues_v2 (`pendingExcludesProcessing`, resources) and
 * get_status_queues_v2 (status, where `pending` includes messages under lease).
 */
export function queueSummary(
  queue: QueueInfo,
  stats: QueueStats | undefined,
  pendingExcludesProcessing: boolean,
) {
  const processing = processingOf(stats);
  const pending = stats?.pending ?? 0;
  return {
    id: queueIdOf(queue.name),
    name: queue.name,
    namespace: queue.namespace,
    task: queue.task,
    createdAt: queue.createdAt,
    partitions: queue.partitions,
    messages: {
      total: stats?.retained ?? 0,
      pending: pendingExcludesProcessing ? Math.max(0, pending - processing) : pending,
      processing,
    },
  };
}

/** One partition's counts across groups, as get_queue_v2 aggregates them (MAX over groups). */
function partitionCounts(state: PartitionState) {
  const groups = state.groups;
  const pending = groups.length === 0 ? state.retained : Math.max(...groups.map((g) => g.lag));
  const completed = groups.length === 0 ? 0 : Math.max(...groups.map((g) => state.retained - g.lag));
  return {
    total: state.retained,
    pending,
    processing: groups.length === 0 ? 0 : Math.max(...groups.map((g) => g.leased)),
    completed: Math.max(0, completed),
    failed: 0,
    deadLetter: state.deadLetters,
  };
}

type Counts = ReturnType<typeof partitionCounts>;

function sumCounts(all: Counts[]): Counts {
  const total: Counts = { total: 0, pending: 0, processing: 0, completed: 0, failed: 0, deadLetter: 0 };
  for (const counts of all) {
    for (const key of Object.keys(total) as (keyof Counts)[]) total[key] += counts[key];
  }
  return total;
}

function oldestPending(state: PartitionState): number {
  if (state.groups.length === 0) return state.oldestAt;
  const times = state.groups.map((g) => g.oldestPendingAt).filter((at) => at > 0);
  return times.length > 0 ? Math.min(...times) : 0;
}

const byName = (a: PartitionState, b: PartitionState) =>
  a.partition < b.partition ? -1 : a.partition > b.partition ? 1 : 0;

/** get_queue_v2: `GET /api/v1/resources/queues/:queue`. */
export function queueResource(queue: QueueInfo, partitions: PartitionState[]) {
  const rows = [...partitions].sort(byName).map((state) => ({ state, counts: partitionCounts(state) }));
  return {
    id: queueIdOf(queue.name),
    name: queue.name,
    namespace: queue.namespace,
    task: queue.task,
    createdAt: queue.createdAt,
    partitions: rows.map(({ state, counts }) => ({
      id: state.partitionId,
      name: state.partition,
      createdAt: null,
      stats: counts,
      oldestMessage: isoOrNull(oldestPending(state)),
      newestMessage: isoOrNull(state.newestAt),
    })),
    totals: sumCounts(rows.map((row) => row.counts)),
  };
}

/** get_queue_detail_v2: `GET /api/v1/status/queues/:queue`. */
export function queueDetail(queue: QueueInfo, partitions: PartitionState[]) {
  const rows = [...partitions].sort(byName).map((state) => ({ state, counts: partitionCounts(state) }));
  const totals = sumCounts(rows.map((row) => row.counts));
  return {
    queue: {
      id: queueIdOf(queue.name),
      name: queue.name,
      namespace: queue.namespace,
      task: queue.task,
      priority: queue.options.priority,
      createdAt: queue.createdAt,
      config: {
        leaseTime: queue.options.leaseTime,
        retryLimit: queue.options.retryLimit,
        retryDelay: queue.options.retryDelay,
        ttl: queue.options.ttl,
        maxQueueSize: queue.options.maxSize,
        deadLetterQueue: queue.options.deadLetterQueue,
        // Herald's queue -> topic bridge (docs/broker-outbox.md): extra fields, Queen's are as before.
        bridgeTopic: queue.options.bridgeTopic,
        bridgeOn: queue.options.bridgeOn,
        bridgePrivate: queue.options.bridgePrivate,
      },
    },
    partitions: rows.map(({ state, counts }) => ({
      id: state.partitionId,
      name: state.partition,
      createdAt: null,
      messages: counts,
      stats: counts,
      cursor: {
        // Resolved messages still retained, summed over groups (Queen counts every one ever).
        totalConsumed: state.groups.reduce((total, g) => total + Math.max(0, state.retained - g.lag), 0),
        batchesConsumed: 0,
      },
      lastActivity: null,
      oldestMessage: isoOrNull(oldestPending(state)),
      newestMessage: isoOrNull(state.newestAt),
    })),
    totals: { messages: totals, ...totals },
  };
}

/** One entry of get_namespaces_v2 / get_tasks_v2, by a queue's namespace or task. */
export function groupedQueues(
  queues: QueueInfo[],
  stats: Map<string, QueueStats>,
  keyOf: (queue: QueueInfo) => string,
): { key: string; queues: number; partitions: number; messages: { total: number; pending: number } }[] {
  const entries = new Map<string, { queues: number; partitions: number; total: number; pending: number }>();
  for (const queue of queues) {
    const key = keyOf(queue);
    if (!key) continue;
    const entry = entries.get(key) ?? { queues: 0, partitions: 0, total: 0, pending: 0 };
    const queueStats = stats.get(queue.name);
    entry.queues++;
    entry.partitions += queue.partitions;
    entry.total += queueStats?.retained ?? 0;
    entry.pending += Math.max(0, (queueStats?.pending ?? 0) - processingOf(queueStats));
    entries.set(key, entry);
  }
  return [...entries]
    .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))
    .map(([key, entry]) => ({
      key,
      queues: entry.queues,
      partitions: entry.partitions,
      messages: { total: entry.total, pending: entry.pending },
    }));
}

function median(values: number[]): number {
  if (values.length === 0) return 0;
  const sorted = [...values].sort((a, b) => a - b);
  const middle = sorted.length >> 1;
  return sorted.length % 2 === 1
    ? (sorted[middle] as number)
    : Math.round(((sorted[middle - 1] as number) + (sorted[middle] as number)) / 2);
}

const average = (values: number[]) =>
  values.length === 0 ? 0 : Math.round(values.reduce((total, v) => total + v, 0) / values.length);

/** Seconds since the oldest stats snapshot was taken; -1 without one (Queen's statsAge). */
export function statsAge(stats: QueueStats[], now: number): number {
  return stats.length === 0 ? -1 : secondsSince(Math.min(...stats.map((s) => s.at)), now);
}

/**
 * Where a view's counts come from, as response headers (issue #13), so that Queen's JSON shapes
 * stay as they are. Snapshot views mix live facts (the queue list, `partitions`) with counts of
 * the last stats snapshot (`BROKER_STATS_INTERVAL`, or `POST /api/v1/stats/refresh`):
 * `herald-stats-source: snapshot`, `herald-stats-at` (the oldest snapshot used, ISO, or `none`),
 * `herald-stats-age` (its age in seconds, -1 without one) and `herald-stats-missing` (listed queues
 * the snapshot does not cover yet: their counts read 0). Views read when asked say `live`.
 */
export function statsHeaders(
  stats: readonly QueueStats[],
  queues: readonly QueueInfo[],
  now: number,
): Record<string, string> {
  const covered = new Set(stats.map((s) => s.queue));
  const at = stats.length === 0 ? 0 : Math.min(...stats.map((s) => s.at));
  return {
    'herald-stats-source': 'snapshot',
    'herald-stats-at': at > 0 ? new Date(at).toISOString() : 'none',
    'herald-stats-age': String(statsAge([...stats], now)),
    'herald-stats-missing': String(queues.filter((queue) => !covered.has(queue.name)).length),
  };
}

/** The header of views computed from the partitions when asked (see statsHeaders). */
export const LIVE_STATS_HEADERS: Readonly<Record<string, string>> = { 'herald-stats-source': 'live' };

const resolvedOf = (stats: QueueStats) => stats.groups.reduce((total, g) => total + g.resolved, 0);

/** get_system_overview_v3: `GET /api/v1/resources/overview`. */
export function systemOverview(queues: QueueInfo[], stats: QueueStats[], now: number) {
  const groups = stats.flatMap((s) => s.groups);
  const timeLags = groups.filter((g) => g.lag > 0).map((g) => secondsSince(g.oldestPendingAt, now));
  const offsetLags = groups.map((g) => g.lag);
  const sum = (pick: (s: QueueStats) => number) => stats.reduce((total, s) => total + pick(s), 0);
  return {
    queues: queues.length,
    partitions: queues.reduce((total, q) => total + q.partitions, 0),
    namespaces: new Set(queues.map((q) => q.namespace).filter(Boolean)).size,
    tasks: new Set(queues.map((q) => q.task).filter(Boolean)).size,
    messages: {
      total: sum((s) => s.pushed),
      pending: sum((s) => Math.max(0, s.pending - processingOf(s))),
      processing: sum(processingOf),
      completed: sum(resolvedOf),
      failed: 0,
      deadLetter: sum((s) => s.deadLetters),
    },
    lag: {
      time: { avg: average(timeLags), median: median(timeLags), min: 0, max: Math.max(0, ...timeLags) },
      offset: { avg: average(offsetLags), median: 0, min: 0, max: Math.max(0, ...offsetLags) },
    },
    throughput: {
      ingestedPerSecond: round2(sum((s) => s.pushedPerSecond ?? 0)),
      processedPerSecond: round2(sum((s) => s.resolvedPerSecond ?? 0)),
    },
    timestamp: new Date(now).toISOString(),
    statsAge: statsAge(stats, now),
  };
}

/** The time range of get_status_v3 / get_analytics_v1 and its bucket width in minutes. */
export function bucketMinutes(from: number, to: number): number {
  const minutes = (to - from) / 60_000;
  if (minutes <= 60) return 1;
  if (minutes <= 360) return 5;
  if (minutes <= 1440) return 15;
  if (minutes <= 10080) return 60;
  return 360;
}

/** get_status_v3: `GET /api/v1/status` (Herald adds `backend` and `parkedLongPolls`). */
export function systemStatus(
  queues: QueueInfo[],
  stats: QueueStats[],
  range: { from: number; to: number },
  now: number,
) {
  const byQueue = new Map(stats.map((s) => [s.queue, s]));
  const sum = (pick: (s: QueueStats) => number) => stats.reduce((total, s) => total + pick(s), 0);
  const deadLetters = sum((s) => s.deadLetters);
  return {
    timeRange: { from: new Date(range.from).toISOString(), to: new Date(range.to).toISOString() },
    bucketMinutes: bucketMinutes(range.from, range.to),
    pointCount: 0,
    throughput: [],
    queues: queues
      .filter((queue) => (byQueue.get(queue.name)?.retained ?? 0) > 0)
      .map((queue) => {
        const queueStats = byQueue.get(queue.name) as QueueStats;
        return {
          id: queueIdOf(queue.name),
          name: queue.name,
          namespace: queue.namespace,
          task: queue.task,
          partitions: queue.partitions,
          totalConsumed: resolvedOf(queueStats),
        };
      }),
    messages: {
      total: sum((s) => s.pushed),
      pending: sum((s) => s.pending),
      processing: 0,
      completed: sum(resolvedOf),
      failed: 0,
      deadLetter: deadLetters,
      requests: { push: 0, pop: 0, ack: 0 },
      batchEfficiency: { push: 0, pop: 0, ack: 0 },
    },
    leases: {
      active: sum((s) => s.activeLeases),
      partitionsWithLeases: sum((s) => s.activeLeases),
      totalBatchSize: sum((s) => s.leasedMessages ?? 0),
      totalAcked: sum((s) => s.leasedAnswered ?? 0),
    },
    deadLetterQueue: { totalMessages: deadLetters, affectedPartitions: 0, topErrors: [] },
    workers: [],
    errors: { dbErrors: 0, ackFailed: 0, dlqMessages: deadLetters },
    statsAge: statsAge(stats, now),
  };
}

/** get_consumer_groups_v4: one entry per (group, queue). */
export function consumerGroupEntry(
  group: string,
  queue: QueueInfo,
  stats: GroupStats | undefined,
  now: number,
) {
  const maxTimeLag = stats && stats.lag > 0 ? secondsSince(stats.oldestPendingAt, now) : 0;
  const subscribedAt = stats?.subscribedAt ?? 0;
  return {
    name: group,
    topics: [queue.name],
    queueName: queue.name,
    members: queue.partitions,
    partitionsWithLag: stats?.partitionsWithLag ?? 0,
    totalLag: stats?.lag ?? 0,
    maxTimeLag,
    state: maxTimeLag > 300 ? 'Lagging' : (stats?.resolved ?? 0) > 0 ? 'Stable' : 'Dead',
    subscriptionMode: subscribedAt > 0 ? 'timestamp' : null,
    subscriptionTimestamp: isoOrNull(subscribedAt),
    subscriptionCreatedAt: null,
  };
}

/** get_consumer_group_details_v1: one queue's partitions for a group. */
export function groupPartitions(group: string, partitions: PartitionState[], now: number) {
  return [...partitions].sort(byName).flatMap((state) => {
    const entry = state.groups.find((g) => g.group === group);
    if (!entry) return [];
    return [
      {
        partition: state.partition,
        workerId: null,
        lastConsumedAt: null,
        totalConsumed: Math.max(0, state.retained - entry.lag),
        offsetLag: entry.lag,
        timeLagSeconds: entry.lag > 0 ? secondsSince(entry.oldestPendingAt, now) : 0,
        leaseActive: entry.leaseActive,
      },
    ];
  });
}

/** get_lagging_partitions_v1: partitions whose oldest unresolved message is older than `minLagSeconds`. */
export function laggingPartitions(
  queue: string,
  partitions: PartitionState[],
  minLagSeconds: number,
  now: number,
) {
  return partitions.flatMap((state) =>
    state.groups
      .filter(
        (g) => g.lag > 0 && g.oldestPendingAt > 0 && secondsSince(g.oldestPendingAt, now) > minLagSeconds,
      )
      .map((g) => {
        const seconds = secondsSince(g.oldestPendingAt, now);
        return {
          consumer_group: g.group,
          queue_name: queue,
          partition_name: state.partition,
          partition_id: state.partitionId,
          worker_id: null,
          offset_lag: g.lag,
          time_lag_seconds: seconds,
          lag_hours: round2(seconds / 3600),
          oldest_unconsumed_at: isoOrNull(g.oldestPendingAt),
          last_consumed_at: null,
        };
      }),
  );
}

/*
 * Consumer-group lag, the signal to autoscale consumers on (GET /api/v1/lag, and the
 * herald_consumer_group_lag_* gauges in metrics.ts): how many messages a group has not resolved,
 * how old the oldest of them is, and on how many partitions. Cluster-wide values from the stats
 * snapshot (refreshed on BROKER_STATS_INTERVAL by whichever node runs the stats job), so every
 * node answers the same.
 */
import type { GroupStats, PartitionState, QueueStats } from './storage.js';

/** The answer of GET /api/v1/lag: the shape KEDA's metrics-api scaler reads (`valueLocation`). */
export interface GroupLag {
  queue: string;
  group: string;
  messages: number;
  oldestSeconds: number;
  partitions: number;
}

/** Age in seconds, at `at`, of a message created at `createdAt` (0: none). */
export function ageSeconds(at: number, createdAt: number): number {
  return createdAt === 0 ? 0 : Math.max(0, (at - createdAt) / 1000);
}

/** A group's lag as the stats snapshot has it. */
export function lagOfGroup(stats: QueueStats, group: GroupStats): GroupLag {
  return {
    queue: stats.queue,
    group: group.group,
    messages: group.lag,
    oldestSeconds: group.lag === 0 ? 0 : ageSeconds(stats.at, group.oldestPendingAt),
    partitions: group.partitionsWithLag,
  };
}

/**
 * A group's lag from the live per-partition view (a queue or group newer than the last stats
 * run). A partition the group has not read yet counts its retained messages: the group starts
 * from the beginning (queue mode before its first pop, say).
 */
export function lagFromPartitions(
  queue: string,
  group: string,
  partitions: readonly PartitionState[],
  now: number,
): GroupLag {
  let messages = 0;
  let oldest = 0;
  let lagging = 0;
  for (const partition of partitions) {
    const state = partition.groups.find((entry) => entry.group === group);
    const lag = state ? state.lag : partition.retained;
    const since = state ? state.oldestPendingAt : partition.oldestAt;
    if (lag === 0) continue;
    messages += lag;
    lagging++;
    if (since > 0 && (oldest === 0 || since < oldest)) oldest = since;
  }
  return { queue, group, messages, oldestSeconds: ageSeconds(now, oldest), partitions: lagging };
}

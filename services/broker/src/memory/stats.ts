/*
 * Queue statistics on the in-process backend: the counterpart of lua/stats-1.lua, refreshed by
 * maintenance and read by /metrics and the status routes.
 */
import { type QueueStats, snapshotRates } from '../storage.js';
import { groupBacklog } from './depth.js';
import { type GroupExtras, groupExtras } from './partition-stats.js';
import { after, consumerOf, type MemoryStore, queuesByName, retained } from './state.js';

export function refreshStats(store: MemoryStore): QueueStats[] {
  const now = store.clock.now();
  const previous = new Map(store.statsSnapshot.map((stats) => [stats.queue, stats]));
  store.statsSnapshot = queuesByName(store).map((queue) => {
    const { leasedMessages, leasedAnswered, extras } = groupExtras(queue, now);
    const groups = [...queue.groups.keys()].map((group) => ({
      group,
      resolved: queue.resolvedBy.get(group) ?? 0,
      lag: groupBacklog(queue, group),
      ...(extras.get(group) as GroupExtras),
    }));
    const pending = groups.length === 0 ? retained(queue) : Math.max(...groups.map((g) => g.lag));
    let oldest = 0;
    let activeLeases = 0;
    for (const partition of queue.partitions.values()) {
      for (const [group] of queue.groups) {
        const consumer = consumerOf(queue, partition, group);
        if (consumer.lease) activeLeases++;
        const first = partition.messages[after(partition, consumer.position)];
        if (first && (oldest === 0 || first.createdAt < oldest)) oldest = first.createdAt;
      }
    }
    return {
      queue: queue.name,
      namespace: queue.namespace,
      task: queue.task,
      partitions: queue.partitions.size,
      pushed: queue.pushed,
      retained: retained(queue),
      pending,
      leasedMessages,
      leasedAnswered,
      oldestPendingAgeSeconds: oldest === 0 || pending === 0 ? 0 : (now - oldest) / 1000,
      deadLetters: queue.deadLetters.length,
      leaseExpiries: queue.leaseExpiries,
      activeLeases,
      ...snapshotRates(previous.get(queue.name), queue.pushed, groups, now),
      groups,
      at: now,
    };
  });
  return store.statsSnapshot;
}

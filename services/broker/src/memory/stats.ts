/*
 * Queue statistics on the in-process backend: the counterpart of lua/stats-1.lua, refreshed by
 * maintenance and read by /metrics and the status routes.
 */
import type { QueueStats } from '../storage.js';
import { groupBacklog } from './depth.js';
import { after, consumerOf, type MemoryStore, retained } from './state.js';

export function refreshStats(store: MemoryStore): QueueStats[] {
  const now = Date.now();
  store.statsSnapshot = [...store.queues.values()].map((queue) => {
    const groups = [...queue.groups.keys()].map((group) => ({
      group,
      resolved: queue.resolvedBy.get(group) ?? 0,
      lag: groupBacklog(queue, group),
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
      oldestPendingAgeSeconds: oldest === 0 || pending === 0 ? 0 : (now - oldest) / 1000,
      deadLetters: queue.deadLetters.length,
      leaseExpiries: queue.leaseExpiries,
      activeLeases,
      groups,
      at: now,
    };
  });
  return store.statsSnapshot;
}

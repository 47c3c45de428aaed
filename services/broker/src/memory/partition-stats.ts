import type { GroupStats, PartitionState } from '../storage.js';
import { LIMITS } from '../validation.js';
import {
  after,
  consumerOf,
  type MemoryConsumer,
  type MemoryMessage,
  type MemoryPartition,
  type MemoryQueue,
} from './state.js';

/*
 * The in-process backend's statistics beyond counters: each group's lagging partitions and
 * subscription, messages under lease (lua/stats-1.lua), and the per-partition state of the
 * detailed views (lua/partitions-1.lua), with the same bounds.
 */

/** Messages of an active lease, and of them those answered already. */
function leaseCounts(consumer: MemoryConsumer, now: number): { batch: number; answered: number } {
  const lease = consumer.lease;
  if (!lease || lease.expiresAt <= now) return { batch: 0, answered: 0 };
  return { batch: lease.size, answered: Math.min(lease.size, lease.answered.size) };
}

/**
 * Unresolved messages of one partition for a group, as lua/partitions-1.lua counts them: the
 * messages after the group's position, at most `count` of them, less those resolved out of
 * order; and the creation time of the first unresolved one among them.
 */
function pendingIn(
  partition: MemoryPartition,
  consumer: MemoryConsumer,
  count: number,
): { read: number; lag: number; oldestAt: number } {
  const start = after(partition, consumer.position);
  const end = Math.min(partition.messages.length, start + count);
  let oldestAt = 0;
  for (let index = start; index < end && oldestAt === 0; index++) {
    const message = partition.messages[index] as MemoryMessage;
    if (!consumer.resolved.has(message.seq)) oldestAt = message.createdAt;
  }
  return { read: end - start, lag: Math.max(0, end - start - consumer.resolved.size), oldestAt };
}

export type GroupExtras = Omit<GroupStats, 'group' | 'resolved' | 'lag'>;

/** What refreshStats adds to the counters: per-group extras and the messages under lease. */
export function groupExtras(
  queue: MemoryQueue,
  now: number,
): { leasedMessages: number; leasedAnswered: number; extras: Map<string, GroupExtras> } {
  let leasedMessages = 0;
  let leasedAnswered = 0;
  const extras = new Map<string, GroupExtras>();
  for (const [group, subscribedAt] of queue.groups) {
    let oldestPendingAt = 0;
    for (const partition of queue.partitions.values()) {
      const consumer = consumerOf(queue, partition, group);
      const counts = leaseCounts(consumer, now);
      leasedMessages += counts.batch;
      leasedAnswered += counts.answered;
      // As lua/stats-1.lua: the partitions with work for the group (its ready index).
      if (!queue.ready.get(group)?.has(partition.name)) continue;
      const first = partition.messages[after(partition, consumer.position)];
      if (first && (oldestPendingAt === 0 || first.createdAt < oldestPendingAt))
        oldestPendingAt = first.createdAt;
    }
    extras.set(group, {
      partitionsWithLag: queue.ready.get(group)?.size ?? 0,
      oldestPendingAt,
      subscribedAt,
    });
  }
  return { leasedMessages, leasedAnswered, extras };
}

export function partitionStates(queue: MemoryQueue, now: number): PartitionState[] {
  const dead = new Map<string, number>();
  for (const letter of queue.deadLetters.slice(-LIMITS.partitionDeadLettersRead)) {
    dead.set(letter.partition, (dead.get(letter.partition) ?? 0) + 1);
  }
  let budget = LIMITS.detailedViewCountBudget;
  return [...queue.partitions.values()].slice(0, LIMITS.maxDetailedPartitions).map((partition) => ({
    partition: partition.name,
    partitionId: partition.id,
    retained: partition.messages.length,
    oldestAt: partition.messages[0]?.createdAt ?? 0,
    newestAt: partition.messages.at(-1)?.createdAt ?? 0,
    deadLetters: dead.get(partition.name) ?? 0,
    groups: [...queue.groups.keys()].map((group) => {
      const consumer = consumerOf(queue, partition, group);
      const pending = pendingIn(partition, consumer, Math.max(1, Math.min(LIMITS.partitionLagCount, budget)));
      budget -= pending.read;
      const lease = consumer.lease;
      const counts = leaseCounts(consumer, now);
      return {
        group,
        lag: pending.lag,
        oldestPendingAt: pending.oldestAt,
        leaseActive: lease !== undefined && lease.expiresAt > now,
        leased: counts.batch - counts.answered,
      };
    }),
  }));
}

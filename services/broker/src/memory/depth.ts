/*
 * Backlogs on the in-process backend: what maxSize is compared with (push.ts, transaction.ts)
 * and the lag the stats report (stats.ts); lua/includes/broker.lua queue_depth and pending:<g>.
 */
import { after, consumerOf, type MemoryQueue, retained } from './state.js';

/**
 * What maxSize is compared with: the backlog of the slowest group (retained messages it has
 * not resolved); before any group exists, every retained message.
 */
export function queueDepth(queue: MemoryQueue): number {
  if (queue.groups.size === 0) return retained(queue);
  let depth = 0;
  for (const group of queue.groups.keys()) depth = Math.max(depth, groupBacklog(queue, group));
  return depth;
}

/** Retained messages `group` has not resolved (lua pending:<g>): its lag in the stats. */
export function groupBacklog(queue: MemoryQueue, group: string): number {
  let pending = 0;
  for (const partition of queue.partitions.values()) {
    const consumer = consumerOf(queue, partition, group);
    pending += partition.messages.length - after(partition, consumer.position);
    pending -= consumer.resolved.size;
  }
  return pending;
}

import type { MemoryConsumer, MemoryMessage, MemoryPartition, MemoryQueue } from './storage-memory.js';

/*
 * The in-process backend's retention, eviction and maxSize depth: the rules of
 * lua/retention-1.lua and lua/includes/broker.lua (queue_depth) on plain maps
 * (docs/broker.md "Queue options").
 */

/** A partition's consumer state for a group, created at the group's subscription start. */
export type ConsumerOf = (partition: MemoryPartition, group: string) => MemoryConsumer;

/** Index of the first message with seq > position (messages are in seq order). */
export function firstAfter(messages: readonly MemoryMessage[], position: number): number {
  let low = 0;
  let high = messages.length;
  while (low < high) {
    const middle = (low + high) >> 1;
    if ((messages[middle] as MemoryMessage).seq <= position) low = middle + 1;
    else high = middle;
  }
  return low;
}

/**
 * What maxSize is compared with: the backlog of the slowest group (retained messages it has
 * not resolved); before any group exists, every retained message.
 */
export function queueDepth(queue: MemoryQueue, consumerOf: ConsumerOf): number {
  let retained = 0;
  for (const partition of queue.partitions.values()) retained += partition.messages.length;
  if (queue.groups.size === 0) return retained;
  let depth = 0;
  for (const group of queue.groups.keys()) depth = Math.max(depth, groupBacklog(queue, group, consumerOf));
  return depth;
}

/** Retained messages `group` has not resolved (lua pending:<g>): its lag in the stats. */
export function groupBacklog(queue: MemoryQueue, group: string, consumerOf: ConsumerOf): number {
  let pending = 0;
  for (const partition of queue.partitions.values()) {
    const consumer = consumerOf(partition, group);
    pending += partition.messages.length - firstAfter(partition.messages, consumer.position);
    pending -= consumer.resolved.size;
  }
  return pending;
}

/** Removes `doomed` (in seq order) from a partition; groups behind them move past. */
function drop(partition: MemoryPartition, doomed: readonly MemoryMessage[]): number {
  const gone = new Set(doomed);
  partition.messages = partition.messages.filter((message) => !gone.has(message));
  for (const message of doomed) partition.dedup.delete(message.transactionId);
  const last = (doomed.at(-1) as MemoryMessage).seq;
  for (const consumer of partition.consumers.values()) {
    if (consumer.position < last) consumer.position = last;
    for (const seq of consumer.resolved) if (seq <= last) consumer.resolved.delete(seq);
    for (const seq of consumer.attempts.keys()) if (seq <= last) consumer.attempts.delete(seq);
  }
  return doomed.length;
}

/** Applies retention and eviction to one queue at `now`; returns the number of messages deleted. */
export function applyQueueRetention(queue: MemoryQueue, now: number, consumerOf: ConsumerOf): number {
  const options = queue.options;
  let ageWindow =
    options.retentionEnabled && options.retentionSeconds > 0 ? options.retentionSeconds * 1000 : 0;
  if (options.ttl > 0 && (ageWindow === 0 || options.ttl * 1000 < ageWindow)) ageWindow = options.ttl * 1000;
  const doneWindow =
    options.retentionEnabled && options.completedRetentionSeconds > 0
      ? options.completedRetentionSeconds * 1000
      : 0;
  const waitWindow = options.maxWaitTimeSeconds * 1000;
  let deleted = 0;
  for (const partition of queue.partitions.values()) {
    let minPosition: number | undefined;
    let leasedPosition: number | undefined;
    for (const group of queue.groups.keys()) {
      const consumer = consumerOf(partition, group);
      minPosition = minPosition === undefined ? consumer.position : Math.min(minPosition, consumer.position);
      if (consumer.lease) {
        leasedPosition =
          leasedPosition === undefined ? consumer.position : Math.min(leasedPosition, consumer.position);
      }
    }
    const consumed = (m: MemoryMessage) => minPosition !== undefined && m.seq <= minPosition;
    const free = (m: MemoryMessage) => leasedPosition === undefined || m.seq <= leasedPosition;
    const expired = (m: MemoryMessage) => free(m) && ageWindow > 0 && m.createdAt <= now - ageWindow;
    const waitedTooLong = (m: MemoryMessage) =>
      free(m) && !consumed(m) && waitWindow > 0 && m.createdAt <= now - waitWindow;
    // A prefix: completed, expired or evicted messages up to the first one kept.
    let cut = 0;
    for (const message of partition.messages) {
      const completed = consumed(message) && doneWindow > 0 && message.createdAt <= now - doneWindow;
      if (completed || expired(message) || waitedTooLong(message)) cut++;
      else break;
    }
    if (cut > 0) deleted += drop(partition, partition.messages.slice(0, cut));
    // Eviction behind completed messages that are kept: the waiting ones right after them.
    if (waitWindow > 0 && minPosition !== undefined) {
      const evicted: MemoryMessage[] = [];
      for (
        let index = firstAfter(partition.messages, minPosition);
        index < partition.messages.length;
        index++
      ) {
        const message = partition.messages[index] as MemoryMessage;
        if (!waitedTooLong(message)) break;
        evicted.push(message);
      }
      if (evicted.length > 0) deleted += drop(partition, evicted);
    }
  }
  return deleted;
}

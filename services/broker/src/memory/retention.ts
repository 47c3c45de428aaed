/*
 * Retention and eviction on the in-process backend: the rules of lua/retention-1.lua on plain
 * maps (docs/broker.md "Queue options"; the rules are listed in redis/retention.ts).
 */
import {
  after,
  consumerOf,
  type MemoryMessage,
  type MemoryPartition,
  type MemoryQueue,
  type MemoryStore,
} from './state.js';

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
function applyQueueRetention(queue: MemoryQueue, now: number): number {
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
      const consumer = consumerOf(queue, partition, group);
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
      for (let index = after(partition, minPosition); index < partition.messages.length; index++) {
        const message = partition.messages[index] as MemoryMessage;
        if (!waitedTooLong(message)) break;
        evicted.push(message);
      }
      if (evicted.length > 0) deleted += drop(partition, evicted);
    }
  }
  return deleted;
}

/** Applies retention and eviction to every queue; returns the number of messages deleted. */
export function applyRetention(store: MemoryStore): number {
  const now = store.clock.now();
  let deleted = 0;
  for (const queue of store.queues.values()) deleted += applyQueueRetention(queue, now);
  return deleted;
}

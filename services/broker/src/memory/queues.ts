/*
 * Queues on the in-process backend: configure (lua: the `cfg` hash), listing, lookup and
 * lua/deleteQueue-1.lua.
 */
import type { QueueInfo, QueueOptions } from '../storage.js';
import { type MemoryQueue, type MemoryStore, queueInfo, queueOf, queuesByName } from './state.js';

export function configure(
  store: MemoryStore,
  name: string,
  options: Partial<QueueOptions>,
  names: { namespace: string; task: string },
): QueueInfo {
  const queue = queueOf(store, name, true) as MemoryQueue;
  Object.assign(queue.options, options);
  queue.namespace = names.namespace;
  queue.task = names.task;
  return queueInfo(queue);
}

export function listQueues(store: MemoryStore): QueueInfo[] {
  return queuesByName(store).map(queueInfo);
}

export function getQueue(store: MemoryStore, name: string): QueueInfo | undefined {
  const queue = store.queues.get(name);
  return queue && queueInfo(queue);
}

export function deleteQueue(store: MemoryStore, name: string): boolean {
  const queue = store.queues.get(name);
  store.groupsBeforeQueue.delete(name);
  if (!queue) return false;
  const now = store.clock.now();
  for (const [deleted, answers] of store.answersOfDeleted) {
    if (![...answers.values()].some((entry) => entry.expiresAt > now)) store.answersOfDeleted.delete(deleted);
  }
  if (queue.answers.size > 0) store.answersOfDeleted.set(name, queue.answers);
  for (const partition of queue.partitions.values()) store.partitionIds.delete(partition.id);
  store.queues.delete(name);
  // As the Redis backend drops its stats field: a deleted queue leaves the gauges at once.
  store.statsSnapshot = store.statsSnapshot.filter((stats) => stats.queue !== name);
  return true;
}

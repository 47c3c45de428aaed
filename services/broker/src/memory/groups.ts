/*
 * Consumer groups on the in-process backend: listing, lua/seek-1.lua and lua/deleteGroup-1.lua.
 */
import type { SeekTarget } from '../storage.js';
import { releaseLease } from './leases.js';
import {
  consumerOf,
  type MemoryPartition,
  type MemoryStore,
  notify,
  positionAt,
  queueOf,
  readyOf,
  registerBeforeQueue,
  reschedule,
} from './state.js';

export function groupsOf(store: MemoryStore, name: string): string[] {
  const groups = store.queues.get(name)?.groups ?? store.groupsBeforeQueue.get(name);
  return [...(groups?.keys() ?? [])].sort();
}

/** Moves a group's position in one partition or all (its leases are dropped); returns how many. */
export function seek(
  store: MemoryStore,
  name: string,
  group: string,
  only: string | undefined,
  target: SeekTarget,
): number {
  const queue = queueOf(store, name, false);
  if (!queue) {
    registerBeforeQueue(store, name, group, 0);
    return 0;
  }
  const now = store.clock.now();
  if (!queue.groups.has(group)) {
    // A new group, as at its first pop: every partition may hold work for it.
    queue.groups.set(group, 0);
    const ready = readyOf(queue, group);
    for (const partitionName of queue.partitions.keys()) ready.set(partitionName, now, true);
  }
  const names = only === undefined ? [...queue.partitions.keys()] : queue.partitions.has(only) ? [only] : [];
  for (const partitionName of names) {
    const partition = queue.partitions.get(partitionName) as MemoryPartition;
    const existing = partition.consumers.get(group);
    if (existing) releaseLease(queue, partition, group, existing);
    partition.consumers.delete(group);
    const consumer = consumerOf(queue, partition, group);
    consumer.position =
      'toEnd' in target ? (partition.messages.at(-1)?.seq ?? 0) : positionAt(partition, target.timestamp);
    reschedule(queue, partition, group, now);
  }
  notify(store, [name]);
  return names.length;
}

export function deleteGroup(store: MemoryStore, name: string, group: string): boolean {
  const queue = store.queues.get(name);
  if (!queue) return store.groupsBeforeQueue.get(name)?.delete(group) ?? false;
  const existed = queue.groups.delete(group);
  for (const partition of queue.partitions.values()) {
    const consumer = partition.consumers.get(group);
    if (consumer) releaseLease(queue, partition, group, consumer);
    partition.consumers.delete(group);
  }
  queue.ready.delete(group);
  queue.resolvedBy.delete(group);
  return existed;
}

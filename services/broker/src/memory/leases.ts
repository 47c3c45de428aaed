/*
 * Leases on the in-process backend: release, expiry (a lease expiry is an attempt), extension
 * and the sweep; the rules of lua/includes/leases.lua, lua/extendLease-1.lua and
 * lua/sweepLeases-1.lua.
 */
import type { LeaseExtension, LeaseSweep } from '../storage.js';
import { failAttempt } from './dead-letters.js';
import {
  advance,
  after,
  type MemoryConsumer,
  type MemoryMessage,
  type MemoryPartition,
  type MemoryQueue,
  type MemoryStore,
  notify,
  queuesByName,
  readyOf,
  reschedule,
} from './state.js';

export function releaseLease(
  queue: MemoryQueue,
  partition: MemoryPartition,
  group: string,
  consumer: MemoryConsumer,
): void {
  const lease = consumer.lease;
  if (!lease) return;
  consumer.lease = undefined;
  const holders = queue.leases.get(lease.id);
  if (holders) {
    const rest = holders.filter((h) => !(h.partition === partition.name && h.group === group));
    if (rest.length === 0) queue.leases.delete(lease.id);
    else queue.leases.set(lease.id, rest);
  }
}

/** Every message of the batch left unanswered counts one failed attempt; then the partition is rescheduled. */
export function expireLease(
  queue: MemoryQueue,
  partition: MemoryPartition,
  group: string,
  consumer: MemoryConsumer,
  now: number,
): void {
  const lease = consumer.lease;
  if (!lease) return;
  for (let index = after(partition, consumer.position); index < partition.messages.length; index++) {
    const message = partition.messages[index] as MemoryMessage;
    if (message.seq > lease.upto) break;
    if (!consumer.resolved.has(message.seq) && !lease.answered.has(message.seq)) {
      failAttempt(queue, partition, group, consumer, message, 'Lease expired', now);
    }
  }
  queue.leaseExpiries++;
  releaseLease(queue, partition, group, consumer);
  advance(partition, consumer);
  reschedule(queue, partition, group, now);
}

export function extendLease(store: MemoryStore, leaseId: string, seconds: number): LeaseExtension {
  const now = store.clock.now();
  for (const queue of store.queues.values()) {
    const holders = queue.leases.get(leaseId);
    if (!holders) continue;
    let earliest: number | undefined;
    let expired = false;
    for (const { partition: name, group } of holders) {
      const partition = queue.partitions.get(name);
      const consumer = partition?.consumers.get(group);
      const lease = consumer?.lease;
      if (!lease || lease.id !== leaseId) continue;
      if (lease.expiresAt <= now) {
        expired = true;
        continue;
      }
      lease.expiresAt = Math.max(lease.expiresAt, now + seconds * 1000);
      const ready = readyOf(queue, group);
      if (ready.has(name)) ready.set(name, lease.expiresAt);
      earliest = earliest === undefined ? lease.expiresAt : Math.min(earliest, lease.expiresAt);
    }
    if (earliest === undefined) {
      return {
        leaseId,
        success: false,
        error: expired ? 'Lease already expired' : 'Lease not active',
        expiresAt: null,
      };
    }
    return { leaseId, success: true, error: null, expiresAt: new Date(earliest).toISOString() };
  }
  return { leaseId, success: false, error: 'Lease not found', expiresAt: null };
}

/** Expires every lease past its time (maintenance; a pop also expires the ones it meets). */
export function sweepLeases(store: MemoryStore): LeaseSweep {
  const now = store.clock.now();
  const expired: { queue: string; count: number }[] = [];
  for (const queue of queuesByName(store)) {
    // Earliest expiry first, ties by "<partition>\n<group>" encoded: the order of the Redis
    // sweep (its `leases` sorted set), so dead letters of one sweep line up the same.
    const due: { order: string; at: number; partition: MemoryPartition; group: string }[] = [];
    for (const holders of queue.leases.values()) {
      for (const { partition: name, group } of holders) {
        const partition = queue.partitions.get(name);
        const lease = partition?.consumers.get(group)?.lease;
        if (partition && lease && lease.expiresAt <= now) {
          const order = `${encodeURIComponent(name)}\n${encodeURIComponent(group)}`;
          due.push({ order, at: lease.expiresAt, partition, group });
        }
      }
    }
    due.sort((a, b) => a.at - b.at || (a.order < b.order ? -1 : a.order > b.order ? 1 : 0));
    let count = 0;
    for (const { partition, group } of due) {
      const consumer = partition.consumers.get(group);
      if (!consumer?.lease) continue;
      expireLease(queue, partition, group, consumer, now);
      count++;
    }
    if (count > 0) expired.push({ queue: queue.name, count });
  }
  notify(
    store,
    expired.map((e) => e.queue),
  );
  return { expired };
}

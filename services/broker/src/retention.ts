import type { BrokerStorage } from './storage.js';

/**
 * Retention keeps Redis memory bounded (broker.md: options the anchor stores but ignores are
 * enforced). Per queue, a message is deleted, with its dedup entry:
 *  - once every consumer group has resolved it and it is older than completedRetentionSeconds
 *    (0: at the next run);
 *  - when older than retentionSeconds (if > 0), consumed or not (a group left behind moves on);
 *  - when older than ttl (if > 0): it would never be delivered anyway.
 * The scripts only visit partitions queued in the per-queue `trim` index (a push or an ack
 * schedules them), never every partition.
 */
export async function applyRetention(storage: BrokerStorage): Promise<number> {
  return storage.applyRetention();
}

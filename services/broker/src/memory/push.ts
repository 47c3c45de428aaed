/*
 * Push on the in-process backend: the rules of lua/push-1.lua (push_items in
 * lua/includes/push.lua): dedup by transactionId per partition, maxSize against the slowest
 * group's backlog, sealed payloads only on a queue with encryptionEnabled.
 */
import { isSealedText } from '../encryption.js';
import { encryptionChanged, queueFull } from '../errors.js';
import { type PushItem, type PushResult, pushCapacity } from '../storage.js';
import { queueDepth } from './depth.js';
import {
  type MemoryMessage,
  type MemoryQueue,
  type MemoryStore,
  notify,
  partitionOf,
  queueOf,
  readyOf,
} from './state.js';

/** Per queue, the items that would store a new message (not a duplicate). */
export function countFresh(store: MemoryStore, items: readonly PushItem[]): Map<string, number> {
  const fresh = new Map<string, number>();
  const seen = new Set<string>();
  for (const item of items) {
    const key = `${item.queue}\n${item.partition}\n${item.transactionId}`;
    if (seen.has(key)) continue;
    seen.add(key);
    const existing = store.queues
      .get(item.queue)
      ?.partitions.get(item.partition)
      ?.dedup.get(item.transactionId);
    if (!existing) fresh.set(item.queue, (fresh.get(item.queue) ?? 0) + 1);
  }
  return fresh;
}

/** The first queue that `fresh` new messages would take over its maxSize, if any. */
export function checkCapacity(
  store: MemoryStore,
  fresh: Map<string, number>,
): { queue: string; size: number; maxSize: number } | undefined {
  for (const [name, count] of fresh) {
    const queue = store.queues.get(name);
    if (!queue || queue.options.maxSize <= 0) continue;
    const size = queueDepth(queue);
    if (size + count > queue.options.maxSize) return { queue: name, size, maxSize: queue.options.maxSize };
  }
  return undefined;
}

/** Stores one item (or answers its duplicate); the caller checked capacity and sealing. */
export function append(store: MemoryStore, item: PushItem, index: number, now: number): PushResult {
  const queue = queueOf(store, item.queue, true) as MemoryQueue;
  const partition = partitionOf(store, queue, item.partition);
  const existing = partition.dedup.get(item.transactionId);
  if (existing) {
    return {
      index,
      transaction_id: item.transactionId,
      status: 'duplicate',
      message_id: existing.id,
      partition_id: partition.id,
      trace_id: item.traceId,
      queueName: queue.name,
    };
  }
  store.lastCreatedAt = Math.max(store.lastCreatedAt, now);
  const message: MemoryMessage = {
    seq: ++store.sequence,
    id: item.messageId,
    transactionId: item.transactionId,
    traceId: item.traceId,
    data: item.data,
    producerSub: item.producerSub,
    createdAt: store.lastCreatedAt,
  };
  partition.messages.push(message);
  partition.dedup.set(item.transactionId, message);
  queue.pushed++;
  for (const group of queue.groups.keys()) readyOf(queue, group).set(partition.name, now, true);
  return {
    index,
    transaction_id: item.transactionId,
    status: 'queued',
    message_id: message.id,
    partition_id: partition.id,
    trace_id: item.traceId,
    queueName: queue.name,
  };
}

/** As the Redis scripts: a clear payload for a queue with encryptionEnabled is refused whole. */
export function unsealedQueue(store: MemoryStore, items: readonly PushItem[]): string | undefined {
  return items.find(
    (item) => store.queues.get(item.queue)?.options.encryptionEnabled === true && !isSealedText(item.data),
  )?.queue;
}

/**
 * Queue by queue, as the Redis backend runs one script per queue (each its own Cluster slot):
 * a queue that refuses (encryption, maxSize) stores none of its items, the other queues of
 * the request store theirs, and the first refusal is thrown (docs/broker.md, `maxSize`).
 */
export function push(store: MemoryStore, items: PushItem[]): PushResult[] {
  const byQueue = new Map<string, { item: PushItem; index: number }[]>();
  items.forEach((item, index) => {
    const list = byQueue.get(item.queue) ?? [];
    list.push({ item, index });
    byQueue.set(item.queue, list);
  });
  const now = store.clock.now();
  const results: PushResult[] = new Array(items.length);
  let refusal: Error | undefined;
  for (const [name, list] of byQueue) {
    const queueItems = list.map((entry) => entry.item);
    if (unsealedQueue(store, queueItems) !== undefined) {
      refusal ??= encryptionChanged(name);
      continue;
    }
    const full = checkCapacity(store, countFresh(store, queueItems));
    if (full) {
      refusal ??= queueFull(full.queue, full.size, full.maxSize);
      continue;
    }
    for (const { item, index } of list) results[index] = append(store, item, index, now);
  }
  notify(store, pushCapacity(items, results));
  if (refusal) throw refusal;
  return results;
}

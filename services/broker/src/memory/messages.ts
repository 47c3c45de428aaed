/*
 * Message reads and deletion on the in-process backend: listing, Queen's queue-mode status view
 * (docs/broker.md, "Queen compatibility"), lookup by id and lua/deleteMessage-1.lua.
 */
import { type MessageView, newestFirstPage, QUEUE_MODE, type QueueMessageState } from '../storage.js';
import {
  forgetMessage,
  locate,
  type MemoryMessage,
  type MemoryStore,
  messageView,
  positionAt,
} from './state.js';

function queueMessageState(
  queue: string,
  partition: string,
  partitionId: string,
  message: MemoryMessage,
  status: QueueMessageState['status'],
): QueueMessageState {
  return {
    id: message.id,
    transactionId: message.transactionId,
    partitionId,
    queuePath: `${queue}/${partition}`,
    queue,
    partition,
    status,
    createdAt: new Date(message.createdAt).toISOString(),
  };
}

export function listMessages(
  store: MemoryStore,
  filter: { queue: string; partition?: string; limit: number },
): MessageView[] {
  const queue = store.queues.get(filter.queue);
  if (!queue) return [];
  const names = filter.partition === undefined ? [...queue.partitions.keys()].sort() : [filter.partition];
  const out: MessageView[] = [];
  for (const name of names) {
    const partition = queue.partitions.get(name);
    if (!partition) continue;
    for (const message of partition.messages) {
      if (out.length >= filter.limit) return out;
      out.push(messageView(queue, partition, message));
    }
  }
  return out;
}

export function listQueueMessages(
  store: MemoryStore,
  filter: {
    queue: string;
    limit: number;
    offset: number;
  },
): QueueMessageState[] {
  const queue = store.queues.get(filter.queue);
  if (!queue) return [];
  const now = store.clock.now();
  // By message id, as Redis matches stream ids: a message pushed again under a dead-lettered
  // one's transaction id (after deleteMessage) is not dead.
  const dead = new Set(
    queue.deadLetters
      .filter((letter) => letter.consumerGroup === QUEUE_MODE)
      .map((letter) => `${letter.partitionId}\n${letter.id}`),
  );
  const rows: { at: number; id: string; row: QueueMessageState }[] = [];
  for (const partition of queue.partitions.values()) {
    const consumer = partition.consumers.get(QUEUE_MODE);
    const lease = consumer?.lease && consumer.lease.expiresAt > now ? consumer.lease : undefined;
    // A partition the group has not read yet starts where the group's subscription does.
    const start = queue.groups.get(QUEUE_MODE);
    const position = consumer?.position ?? (start === undefined ? 0 : positionAt(partition, start));
    for (const message of partition.messages.slice(-(filter.offset + filter.limit))) {
      const resolved = message.seq <= position || consumer?.resolved.has(message.seq) === true;
      const status = dead.has(`${partition.id}\n${message.id}`)
        ? 'dead_letter'
        : resolved
          ? 'completed'
          : lease && message.seq <= lease.upto
            ? 'processing'
            : 'pending';
      rows.push({
        at: message.createdAt,
        id: message.id,
        row: queueMessageState(queue.name, partition.name, partition.id, message, status),
      });
    }
  }
  return newestFirstPage(rows, filter.offset, filter.limit);
}

export function getMessage(
  store: MemoryStore,
  partitionId: string,
  transactionId: string,
): MessageView | undefined {
  const located = locate(store, partitionId);
  const message = located?.partition.dedup.get(transactionId);
  return located && message ? messageView(located.queue, located.partition, message) : undefined;
}

export function deleteMessage(store: MemoryStore, partitionId: string, transactionId: string): boolean {
  const partition = locate(store, partitionId)?.partition;
  const message = partition?.dedup.get(transactionId);
  if (!partition || !message) return false;
  partition.dedup.delete(transactionId);
  partition.messages.splice(partition.messages.indexOf(message), 1);
  forgetMessage(partition, message);
  return true;
}

/*
 * Failed attempts and dead letters on the in-process backend: the rules of fail_attempt
 * (lua/includes/leases.lua), dead_letter (lua/includes/broker.lua) and lua/requeueDlq-1.lua.
 */
import { newId } from '../identifiers.js';
import type { DeadLetter } from '../storage.js';
import { append } from './push.js';
import {
  forgetMessage,
  type MemoryConsumer,
  type MemoryMessage,
  type MemoryPartition,
  type MemoryQueue,
  type MemoryStore,
  messageView,
  notify,
  partitionOf,
  resolve,
} from './state.js';

/**
 * The next id of the queue's dead letters, made as Redis makes a stream id: `<ms>-<seq>`, seq
 * counting within one millisecond, never below the last id; a queue created again starts anew.
 */
function nextDeadLetterId(queue: MemoryQueue, now: number): string {
  const last = queue.lastDeadLetterId;
  const id = last && last[0] >= now ? ([last[0], last[1] + 1] as const) : ([now, 0] as const);
  queue.lastDeadLetterId = id;
  return `${id[0]}-${id[1]}`;
}

export function deadLetter(
  queue: MemoryQueue,
  partition: MemoryPartition,
  group: string,
  message: MemoryMessage,
  error: string,
  attempts: number,
  now: number,
): void {
  queue.deadLetters.push({
    dlqId: nextDeadLetterId(queue, now),
    ...messageView(queue, partition, message),
    consumerGroup: group,
    errorMessage: error,
    retryCount: attempts,
    failedAt: new Date(now).toISOString(),
  });
}

/**
 * Counts one failed attempt (a failed ack or a lease expiry); past retryLimit the message is
 * dead-lettered (when the queue keeps dead letters) and resolved. Returns true when it was.
 */
export function failAttempt(
  queue: MemoryQueue,
  partition: MemoryPartition,
  group: string,
  consumer: MemoryConsumer,
  message: MemoryMessage,
  error: string,
  now: number,
): boolean {
  const attempts = (consumer.attempts.get(message.seq) ?? 0) + 1;
  consumer.attempts.set(message.seq, attempts);
  if (attempts > queue.options.retryLimit) {
    if (queue.options.deadLetterQueue) deadLetter(queue, partition, group, message, error, attempts, now);
    resolve(queue, consumer, group, message.seq);
    return true;
  }
  if (queue.options.retryDelay > 0) consumer.notBefore = now + queue.options.retryDelay;
  return false;
}

export function listDeadLetters(
  store: MemoryStore,
  filter: { queue: string; group?: string; limit: number; offset: number },
): { messages: DeadLetter[]; total: number } {
  const letters = (store.queues.get(filter.queue)?.deadLetters ?? []).filter(
    (letter) => filter.group === undefined || letter.consumerGroup === filter.group,
  );
  return { messages: letters.slice(filter.offset, filter.offset + filter.limit), total: letters.length };
}

/** Pushes dead letters again under their transactionId (a fresh message id); returns how many. */
export function requeueDeadLetters(store: MemoryStore, name: string, dlqIds: string[]): number {
  const queue = store.queues.get(name);
  if (!queue) return 0;
  const now = store.clock.now();
  let count = 0;
  // One pass over the DLQ, not one search per id (10,000 ids × a long DLQ).
  const letters = new Map(queue.deadLetters.map((letter) => [letter.dlqId, letter]));
  const requeued = new Set<DeadLetter>();
  for (const dlqId of dlqIds) {
    const letter = letters.get(dlqId);
    if (!letter || requeued.has(letter)) continue;
    requeued.add(letter);
    const partition = partitionOf(store, queue, letter.partition);
    const old = partition.dedup.get(letter.transactionId);
    if (old) {
      partition.dedup.delete(letter.transactionId);
      const at = partition.messages.indexOf(old);
      if (at >= 0) partition.messages.splice(at, 1);
      forgetMessage(partition, old);
    }
    append(
      store,
      {
        queue: name,
        partition: letter.partition,
        transactionId: letter.transactionId,
        messageId: newId(),
        traceId: letter.traceId,
        data: JSON.stringify(letter.data),
        producerSub: letter.producerSub,
      },
      0,
      now,
    );
    queue.pushed--;
    count++;
  }
  if (requeued.size > 0) queue.deadLetters = queue.deadLetters.filter((letter) => !requeued.has(letter));
  if (count > 0) notify(store, [name]);
  return count;
}

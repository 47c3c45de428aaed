import { encryptionChanged } from '../errors.js';
import { deadLetter } from '../memory/dead-letters.js';
import { releaseLease } from '../memory/leases.js';
import { append, checkCapacity, countFresh, unsealedQueue } from '../memory/push.js';
import {
  advance,
  after,
  type MemoryConsumer as Consumer,
  consumerOf,
  locate,
  type MemoryStore,
  type MemoryMessage as Message,
  notify,
  type MemoryPartition as Partition,
  type MemoryQueue as Queue,
  reschedule,
  resolve,
} from '../memory/state.js';
import { pushCapacity } from '../storage.js';
import type { CycleQueueSide, PrepareCycle } from './types.js';

/**
 * The queue side of a streams cycle on the in-process backend, with the same rules as
 * lua/streams-cycle-2.lua: checks the sink pushes and the source ack without changing anything,
 * and returns what applies them, so the caller (streams/memory.ts) applies state and queues in
 * one synchronous step.
 */
export function prepareMemoryCycle(
  store: MemoryStore,
  pushItems: Parameters<PrepareCycle>[0],
  request: Parameters<PrepareCycle>[1],
): ReturnType<PrepareCycle> {
  const now = store.clock.now();
  let located: { queue: Queue; partition: Partition; consumer: Consumer; message: Message } | undefined;
  if (request) {
    const found = locate(store, request.partitionId);
    const message = found?.partition.dedup.get(request.ack.transactionId);
    if (!found || !message) return 'Message not found';
    const consumer = consumerOf(found.queue, found.partition, request.group);
    const lease = consumer.lease;
    if (request.ack.leaseId) {
      if (!lease || lease.id !== request.ack.leaseId || lease.expiresAt <= now)
        return 'Invalid or expired lease';
      if (message.seq > lease.upto) return 'Message is not part of the lease';
    }
    if (message.seq <= consumer.position || consumer.resolved.has(message.seq)) {
      return 'Message already acknowledged';
    }
    located = { ...found, consumer, message };
  }
  // As lua/streams-cycle-2.lua: a clear sink payload for an encrypted queue is refused.
  const unsealed = unsealedQueue(store, pushItems);
  if (unsealed !== undefined) throw encryptionChanged(unsealed);
  const full = checkCapacity(store, countFresh(store, pushItems));
  if (full) return `Queue is full (maxSize ${full.maxSize})`;
  return (): CycleQueueSide => {
    const pushResults = pushItems.map((item, index) => append(store, item, index, now));
    notify(store, pushCapacity(pushItems, pushResults));
    if (!request || !located) return { pushResults, ackResult: null, sourceQueue: null };
    const { queue, partition, consumer, message } = located;
    const { ack, group } = request;
    const lease = consumer.lease;
    const held = lease !== undefined && lease.expiresAt > now;
    const dlq = ack.status === 'failed' || ack.status === 'dlq';
    if (dlq && queue.options.deadLetterQueue) {
      const attempts = consumer.attempts.get(message.seq) ?? 0;
      deadLetter(queue, partition, group, message, ack.error ?? '', attempts, now);
    }
    // The cursor moves to the acked message: everything up to it is consumed by the group.
    for (let index = after(partition, consumer.position); index < partition.messages.length; index++) {
      const seq = (partition.messages[index] as Message).seq;
      if (seq > message.seq) break;
      resolve(queue, consumer, group, seq);
      if (held && seq <= lease.upto) lease.answered.add(seq);
    }
    let released = false;
    if (held && ((ack.leaseId && request.releaseLease) || dlq || lease.answered.size >= lease.size)) {
      releaseLease(queue, partition, group, consumer);
      released = true;
    }
    advance(partition, consumer);
    if (released || !lease) reschedule(queue, partition, group, now);
    if (released) notify(store, [[queue.name, 1]]);
    return {
      pushResults,
      ackResult: { success: true, count: dlq ? 0 : ack.count, lease_released: released, dlq },
      sourceQueue: queue.name,
    };
  };
}

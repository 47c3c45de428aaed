import { type PushItem, type PushResult, pushCapacity } from '../storage.js';
import type {
  MemoryConsumer as Consumer,
  MemoryMessage as Message,
  MemoryPartition as Partition,
  MemoryQueue as Queue,
} from '../storage-memory.js';
import type { CycleQueueSide, PrepareCycle } from './types.js';

/** The in-process backend's internals a cycle uses (MemoryStorage.cycleHost). */
export interface MemoryCycleHost {
  locate(partitionId: string): { queue: Queue; partition: Partition } | undefined;
  consumer(queue: Queue, partition: Partition, group: string): Consumer;
  /** Why these pushes would overflow a queue's maxSize, if they would; throws encryptionChanged for a clear payload to an encrypted queue. */
  capacityError(items: PushItem[]): string | undefined;
  append(item: PushItem, index: number, now: number): PushResult;
  notify(queues: Iterable<string | readonly [string, number]>): void;
  /** Index of the first message after `position`. */
  after(partition: Partition, position: number): number;
  resolve(queue: Queue, consumer: Consumer, group: string, seq: number): void;
  deadLetter(
    queue: Queue,
    partition: Partition,
    group: string,
    message: Message,
    error: string,
    attempts: number,
    now: number,
  ): void;
  releaseLease(queue: Queue, partition: Partition, group: string, consumer: Consumer): void;
  advance(partition: Partition, consumer: Consumer): void;
  reschedule(queue: Queue, partition: Partition, group: string, now: number): void;
}

/**
 * The queue side of a streams cycle on the in-process backend, with the same rules as
 * lua/streams-cycle-0.lua: checks the sink pushes and the source ack without changing anything,
 * and returns what applies them, so the caller (streams/memory.ts) applies state and queues in
 * one synchronous step.
 */
export function prepareMemoryCycle(
  host: MemoryCycleHost,
  pushItems: Parameters<PrepareCycle>[0],
  request: Parameters<PrepareCycle>[1],
): ReturnType<PrepareCycle> {
  const now = Date.now();
  let located: { queue: Queue; partition: Partition; consumer: Consumer; message: Message } | undefined;
  if (request) {
    const found = host.locate(request.partitionId);
    const message = found?.partition.dedup.get(request.ack.transactionId);
    if (!found || !message) return 'Message not found';
    const consumer = host.consumer(found.queue, found.partition, request.group);
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
  const full = host.capacityError(pushItems);
  if (full) return full;
  return (): CycleQueueSide => {
    const pushResults = pushItems.map((item, index) => host.append(item, index, now));
    host.notify(pushCapacity(pushItems, pushResults));
    if (!request || !located) return { pushResults, ackResult: null, sourceQueue: null };
    const { queue, partition, consumer, message } = located;
    const { ack, group } = request;
    const lease = consumer.lease;
    const held = lease !== undefined && lease.expiresAt > now;
    const dlq = ack.status === 'failed' || ack.status === 'dlq';
    if (dlq && queue.options.deadLetterQueue) {
      const attempts = consumer.attempts.get(message.seq) ?? 0;
      host.deadLetter(queue, partition, group, message, ack.error ?? '', attempts, now);
    }
    // The cursor moves to the acked message: everything up to it is consumed by the group.
    for (let index = host.after(partition, consumer.position); index < partition.messages.length; index++) {
      const seq = (partition.messages[index] as Message).seq;
      if (seq > message.seq) break;
      host.resolve(queue, consumer, group, seq);
      if (held && seq <= lease.upto) lease.answered.add(seq);
    }
    let released = false;
    if (held && ((ack.leaseId && request.releaseLease) || dlq || lease.answered.size >= lease.size)) {
      host.releaseLease(queue, partition, group, consumer);
      released = true;
    }
    host.advance(partition, consumer);
    if (released || !lease) host.reschedule(queue, partition, group, now);
    if (released) host.notify([[queue.name, 1]]);
    return {
      pushResults,
      ackResult: { success: true, count: dlq ? 0 : ack.count, lease_released: released, dlq },
      sourceQueue: queue.name,
    };
  };
}

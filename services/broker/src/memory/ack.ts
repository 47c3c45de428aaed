/*
 * Acknowledgements on the in-process backend: the rules of lua/ack-1.lua (ack_many in
 * lua/includes/ack.lua), repeats included (docs/broker.md, "Acknowledgements are idempotent").
 */
import type { AckInput, AckResult } from '../storage.js';
import { deadLetter, failAttempt } from './dead-letters.js';
import { releaseLease } from './leases.js';
import {
  advance,
  consumerOf,
  locate,
  type MemoryMessage,
  type MemoryPartition,
  type MemoryQueue,
  type MemoryStore,
  notify,
  positionAt,
  reschedule,
  resolve,
} from './state.js';

/** One ack's result on the wire: a failure when `error` is given, else a success. */
function ackResult(
  index: number,
  ack: AckInput,
  queueName: string | null,
  partitionName: string | null,
  outcome: { error?: string; leaseReleased?: boolean; dlq?: boolean; repeat?: boolean },
): AckResult {
  return {
    index,
    transactionId: ack.transactionId,
    success: outcome.error === undefined,
    error: outcome.error ?? null,
    queueName,
    partitionName,
    leaseReleased: outcome.leaseReleased ?? false,
    dlq: outcome.dlq ?? false,
    repeat: outcome.repeat ?? false,
  };
}

/** The key of an ack's recorded answer under its lease: the message as the client names it. */
function answerKey(partitionId: string, transactionId: string): string {
  return `${partitionId}\n${transactionId}`;
}

/** How long after the last ack under a lease its answers are kept for repeats (lua ANSWER_MEMORY_MS). */
const ANSWER_MEMORY_MS = 60_000;

const VALID_STATUS_COMPLETED = new Set(['completed', 'success']);

/** What an ack asks for, for repeat detection (lua ack_class). */
function ackClass(status: AckInput['status']): 'done' | 'dlq' | 'failed' {
  if (VALID_STATUS_COMPLETED.has(status)) return 'done';
  return status === 'dlq' ? 'dlq' : 'failed';
}

/**
 * The same rules as the Lua ack (lua/includes/ack.lua, ack_verdict): an ack that repeats one already
 * applied is a success flagged `repeat` (its `dlq` what the first answer said) and changes
 * nothing; under a lease the recorded answer decides, without one a resolved message repeats
 * a completed/success ack.
 */
export function checkAck(
  store: MemoryStore,
  ack: AckInput,
  now: number,
):
  | { queue: MemoryQueue; partition: MemoryPartition; repeat: { dlq: boolean } }
  | { queue: MemoryQueue; partition: MemoryPartition; message: MemoryMessage; repeat?: undefined }
  | string {
  const located = locate(store, ack.partitionId);
  if (!located) return 'Message not found';
  // The answer recorded under the lease decides first: retention may have removed the
  // message since (completedRetentionSeconds 0), and its retry must still be a repeat.
  if (ack.leaseId) {
    const answers = located.queue.answers.get(ack.leaseId);
    const memo =
      answers && answers.expiresAt > now
        ? answers.byAck.get(answerKey(ack.partitionId, ack.transactionId))
        : undefined;
    if (memo !== undefined) {
      const [kind, dlq] = memo.split(':');
      if (kind !== ackClass(ack.status)) return 'Message already acknowledged';
      return { ...located, repeat: { dlq: dlq === '1' } };
    }
  }
  const message = located.partition.dedup.get(ack.transactionId);
  if (!message) return 'Message not found';
  // Read without creating the group's state here: a refused ack leaves no trace (as on Redis),
  // and a group that subscribes later starts where its subscription says.
  const { queue, partition } = located;
  const consumer = partition.consumers.get(ack.group);
  const position = consumer?.position ?? positionAt(partition, queue.groups.get(ack.group) ?? 0);
  const resolved = message.seq <= position || consumer?.resolved.has(message.seq) === true;
  if (ack.leaseId) {
    const lease = consumer?.lease;
    if (!lease || lease.id !== ack.leaseId || lease.expiresAt <= now) return 'Invalid or expired lease';
  } else if (resolved && ackClass(ack.status) === 'done') {
    return { ...located, repeat: { dlq: false } };
  }
  if (resolved) return 'Message already acknowledged';
  return { ...located, message };
}

function rememberAck(queue: MemoryQueue, ack: AckInput, now: number, answer: string): void {
  const leaseId = ack.leaseId as string;
  let answers = queue.answers.get(leaseId);
  if (!answers) {
    if (queue.answers.size >= queue.answersSweepAt) {
      for (const [id, entry] of queue.answers) if (entry.expiresAt <= now) queue.answers.delete(id);
      queue.answersSweepAt = Math.max(1024, queue.answers.size * 2);
    }
    answers = { expiresAt: 0, byAck: new Map() };
    queue.answers.set(leaseId, answers);
  }
  answers.expiresAt = now + ANSWER_MEMORY_MS;
  answers.byAck.set(answerKey(ack.partitionId, ack.transactionId), answer);
}

export function applyAck(store: MemoryStore, ack: AckInput, index: number, now: number): AckResult {
  const checked = checkAck(store, ack, now);
  if (typeof checked === 'string') {
    const names = store.partitionIds.get(ack.partitionId);
    return ackResult(index, ack, names?.[0] ?? null, names?.[1] ?? null, { error: checked });
  }
  const { queue, partition } = checked;
  if (checked.repeat) {
    return ackResult(index, ack, queue.name, partition.name, { dlq: checked.repeat.dlq, repeat: true });
  }
  const { message } = checked;
  const group = ack.group;
  const consumer = consumerOf(queue, partition, group);
  const lease = consumer.lease;
  const leased = lease !== undefined && lease.expiresAt > now && message.seq <= lease.upto;
  let dlq = false;
  if (VALID_STATUS_COMPLETED.has(ack.status)) {
    resolve(queue, consumer, group, message.seq);
  } else if (ack.status === 'dlq') {
    if (queue.options.deadLetterQueue) {
      deadLetter(
        queue,
        partition,
        group,
        message,
        ack.error ?? '',
        consumer.attempts.get(message.seq) ?? 0,
        now,
      );
    }
    resolve(queue, consumer, group, message.seq);
    dlq = true;
  } else {
    dlq = failAttempt(queue, partition, group, consumer, message, ack.error ?? '', now);
  }
  if (ack.leaseId && lease) {
    rememberAck(queue, ack, now, `${ackClass(ack.status)}:${dlq ? 1 : 0}`);
  }
  let released = false;
  if (leased && lease) {
    lease.answered.add(message.seq);
    if (lease.answered.size >= lease.size) {
      releaseLease(queue, partition, group, consumer);
      released = true;
    }
  }
  advance(partition, consumer);
  if (released || !lease) reschedule(queue, partition, group, now);
  return ackResult(index, ack, queue.name, partition.name, { leaseReleased: released, dlq });
}

export function ack(store: MemoryStore, acks: AckInput[]): AckResult[] {
  const now = store.clock.now();
  const results = acks.map((ack, index) => applyAck(store, ack, index, now));
  notify(
    store,
    results
      .filter(
        (r, i) => r.leaseReleased || (r.success && !VALID_STATUS_COMPLETED.has((acks[i] as AckInput).status)),
      )
      .map((r) => [r.queueName as string, 1] as const),
  );
  return results;
}

/*
 * Transactions on the Redis backend: one lua/transaction-1.lua call, pushes and acks
 * all-or-nothing. The script declares the base of every queue it touches as a key; on Redis
 * Cluster (`backend.oneSlot`) those must share one hash tag, so a transaction spanning queues in
 * different slots is refused before anything is written (docs/broker-topologies.md "Redis topologies").
 */
import { encryptionChanged } from '../errors.js';
import { namespaceAndTask, partitionIdOf } from '../identifiers.js';
import type { TransactionOperation, TransactionOutcome } from '../storage.js';
import { ackArguments } from './ack.js';
import { type RedisBackend, type Reply, slotTag } from './context.js';
import { pushItemArguments } from './push.js';

/** The refusal of a transaction whose queues live in different Redis Cluster slots. */
export function crossSlotError(first: string, other: string): string {
  return (
    `Transaction spans queues in different Redis Cluster slots ('${first}' and '${other}'): ` +
    'on Redis Cluster a transaction may only touch queues that share a slot group (BROKER_REDIS_SLOT_GROUP)'
  );
}

export async function transaction(
  backend: RedisBackend,
  operations: TransactionOperation[],
): Promise<TransactionOutcome> {
  const args: string[] = [];
  const touched = new Set<string>();
  const pushes: { queue: string; partitionId: string }[] = [];
  /** KEYS: the base of each queue touched, in first-use order (the script's key index is 1-based). */
  const bases: string[] = [];
  const queues: string[] = [];
  /** Each operation's key index. */
  const keyIndexes: number[] = [];
  const keyOf = (queue: string): number => {
    const base = backend.base(queue);
    let index = bases.indexOf(base);
    if (index === -1) index = bases.push(base) - 1;
    queues[index] = queue;
    keyIndexes.push(index + 1);
    return index + 1;
  };
  for (const [index, operation] of operations.entries()) {
    if (operation.type === 'push') {
      const { item } = operation;
      const partitionId = partitionIdOf(item.queue, item.partition);
      await backend.registry.register(item.queue, [[item.partition, partitionId]]);
      const { namespace, task } = namespaceAndTask(item.queue);
      args.push('push', String(keyOf(item.queue)), namespace, task, ...pushItemArguments(item, partitionId));
      touched.add(item.queue);
      pushes[index] = { queue: item.queue, partitionId };
    } else {
      const { ack } = operation;
      // An unknown partition is checked by the script too (key index 0: not found), in
      // operation order, so an earlier failing operation answers first, as in process
      // (differential test).
      const resolved = await backend.registry.resolve(ack.partitionId);
      const [queue, partition] = resolved ?? ['', ''];
      if (!resolved) keyIndexes.push(0);
      args.push('ack', resolved ? String(keyOf(queue)) : '0', ...ackArguments(ack, partition));
      if (resolved) touched.add(queue);
    }
  }
  // Only acks of partitions no queue has: the first one fails (nothing to run).
  if (bases.length === 0) return { success: false, failedIndex: 0, error: 'Message not found' };
  if (backend.oneSlot) {
    const tag = slotTag(bases[0] as string);
    const other = bases.findIndex((base) => slotTag(base) !== tag);
    if (other !== -1) {
      // Answered at the first operation on a queue outside the first queue's slot.
      return {
        success: false,
        failedIndex: keyIndexes.indexOf(other + 1),
        error: crossSlotError(queues[0] as string, queues[other] as string),
      };
    }
  }
  const reply = await backend.run<Reply[]>('transaction', bases, args);
  if (reply[0] === 'CLEAR') {
    const refused = operations[Number(reply[1])];
    throw encryptionChanged(refused?.type === 'push' ? refused.item.queue : '');
  }
  if (reply[0] === 'FAIL') {
    return { success: false, failedIndex: Number(reply[1]), error: String(reply[2]) };
  }
  const rows = reply[1] as Reply[][];
  const results = operations.map((operation, index) => {
    const row = rows[index] as Reply[];
    if (operation.type === 'push') {
      const push = pushes[index] as { queue: string; partitionId: string };
      return {
        index,
        type: 'push' as const,
        success: true as const,
        transactionId: operation.item.transactionId,
        messageId: String(row[2]),
        partitionId: push.partitionId,
        queueName: push.queue,
        status: row[1] === 1 ? ('queued' as const) : ('duplicate' as const),
      };
    }
    return {
      index,
      type: 'ack' as const,
      success: true as const,
      transactionId: operation.ack.transactionId,
      error: null,
      dlq: row[2] === 1,
      repeat: row[3] === 1,
    };
  });
  backend.notify(touched);
  return { success: true, results };
}

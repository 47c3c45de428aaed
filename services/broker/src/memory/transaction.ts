/*
 * Transactions on the in-process backend: the rules of lua/transaction-1.lua, pushes and acks
 * all-or-nothing (every operation checked before any is applied).
 */
import { encryptionChanged } from '../errors.js';
import type { TransactionOperation, TransactionOutcome } from '../storage.js';
import { applyAck, checkAck } from './ack.js';
import { append, checkCapacity, countFresh, unsealedQueue } from './push.js';
import { type MemoryStore, notify } from './state.js';

export function transaction(store: MemoryStore, operations: TransactionOperation[]): TransactionOutcome {
  const now = store.clock.now();
  const acked = new Set<string>();
  // In order, as the Redis script checks: a clear payload for an encrypted queue is refused
  // when it comes before the first failing ack, and the other way round.
  for (const [index, operation] of operations.entries()) {
    if (operation.type === 'push') {
      if (unsealedQueue(store, [operation.item]) !== undefined) throw encryptionChanged(operation.item.queue);
      continue;
    }
    const checked = checkAck(store, operation.ack, now);
    if (typeof checked === 'string') return { success: false, error: checked, failedIndex: index };
    const key = `${operation.ack.partitionId}\n${operation.ack.group}\n${operation.ack.transactionId}`;
    if (acked.has(key)) return { success: false, error: 'Message already acknowledged', failedIndex: index };
    acked.add(key);
  }
  const pushes = operations.flatMap((operation) => (operation.type === 'push' ? [operation.item] : []));
  const full = checkCapacity(store, countFresh(store, pushes));
  if (full) return { success: false, error: `Queue is full (maxSize ${full.maxSize})`, failedIndex: -1 };
  const touched = new Set<string>();
  const results = operations.map((operation, index) => {
    if (operation.type === 'push') {
      const pushed = append(store, operation.item, index, now);
      touched.add(pushed.queueName);
      return {
        index,
        type: 'push' as const,
        success: true as const,
        transactionId: pushed.transaction_id,
        messageId: pushed.message_id,
        partitionId: pushed.partition_id,
        queueName: pushed.queueName,
        status: pushed.status,
      };
    }
    const result = applyAck(store, operation.ack, index, now);
    if (result.queueName) touched.add(result.queueName);
    return {
      index,
      type: 'ack' as const,
      success: true as const,
      transactionId: operation.ack.transactionId,
      error: null,
      dlq: result.dlq,
      repeat: result.repeat,
    };
  });
  notify(store, touched);
  return { success: true, results };
}

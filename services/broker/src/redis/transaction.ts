/*
 * Transactions on the Redis backend: one lua/transaction-0.lua call, pushes and acks
 * all-or-nothing (standalone Redis only: a transaction may span queues, see docs/broker.md).
 */
import { encryptionChanged } from '../errors.js';
import { namespaceAndTask, partitionIdOf } from '../identifiers.js';
import type { TransactionOperation, TransactionOutcome } from '../storage.js';
import { ackArguments } from './ack.js';
import type { RedisBackend, Reply } from './context.js';
import { pushItemArguments } from './push.js';

export async function transaction(
  backend: RedisBackend,
  operations: TransactionOperation[],
): Promise<TransactionOutcome> {
  const args: string[] = [];
  const touched = new Set<string>();
  const pushes: { queue: string; partitionId: string }[] = [];
  for (const [index, operation] of operations.entries()) {
    if (operation.type === 'push') {
      const { item } = operation;
      const partitionId = partitionIdOf(item.queue, item.partition);
      await backend.registry.register(item.queue, [[item.partition, partitionId]]);
      const { namespace, task } = namespaceAndTask(item.queue);
      args.push('push', backend.base(item.queue), namespace, task, ...pushItemArguments(item, partitionId));
      touched.add(item.queue);
      pushes[index] = { queue: item.queue, partitionId };
    } else {
      const { ack } = operation;
      // An unknown partition is checked by the script too, under a queue no one can name (''),
      // where it is not found: in operation order, so an earlier failing operation answers
      // first, as in process (differential test).
      const [queue, partition] = (await backend.registry.resolve(ack.partitionId)) ?? ['', ''];
      args.push('ack', backend.base(queue), ...ackArguments(ack, partition));
      if (queue !== '') touched.add(queue);
    }
  }
  const reply = await backend.run<Reply[]>('transaction', [], args);
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

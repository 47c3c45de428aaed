/*
 * Push on the Redis backend: one lua/push-1.lua call per queue (registering the queue and its
 * partitions first, so maintenance and acks by partition id find them).
 */
import { encryptionChanged, queueFull } from '../errors.js';
import { namespaceAndTask, partitionIdOf } from '../identifiers.js';
import { type PushItem, type PushResult, pushCapacity } from '../storage.js';
import { forEachBounded, QUEUES_IN_FLIGHT } from './bounded.js';
import { encode, type RedisBackend, type Reply } from './context.js';

/** One item's ARGV entries, in the order read_push_item (lua/includes/push-items.lua) reads them. */
export function pushItemArguments(item: PushItem, partitionId: string): string[] {
  return [
    encode(item.partition),
    partitionId,
    item.transactionId,
    item.messageId,
    item.traceId ?? '',
    item.data,
    item.producerSub ?? '',
  ];
}

export async function push(backend: RedisBackend, items: PushItem[]): Promise<PushResult[]> {
  const byQueue = new Map<string, { index: number; item: PushItem; partitionId: string }[]>();
  items.forEach((item, index) => {
    const list = byQueue.get(item.queue) ?? [];
    list.push({ index, item, partitionId: partitionIdOf(item.queue, item.partition) });
    byQueue.set(item.queue, list);
  });
  const results: PushResult[] = new Array(items.length);
  // By queue in input order, so the first refusal is the same whatever script answers first.
  const failures: (Error | undefined)[] = [];
  await forEachBounded([...byQueue], QUEUES_IN_FLIGHT, async ([queue, list], order) => {
    await backend.registry.register(
      queue,
      list.map(({ item, partitionId }) => [item.partition, partitionId] as [string, string]),
    );
    const base = backend.base(queue);
    const { namespace, task } = namespaceAndTask(queue);
    const args: (string | number)[] = [namespace, task];
    for (const { item, partitionId } of list) {
      args.push(...pushItemArguments(item, partitionId));
    }
    const reply = await backend.run<Reply[]>('push', [base], args);
    if (reply[0] === 'CLEAR') {
      failures[order] = encryptionChanged(queue);
      return;
    }
    if (reply[0] === 'FULL') {
      failures[order] = queueFull(queue, Number(reply[1]), Number(reply[2]));
      return;
    }
    const rows = reply[1] as [number, string][];
    list.forEach(({ index, item, partitionId }, position) => {
      const [queued, messageId] = rows[position] as [number, string];
      results[index] = {
        index,
        transaction_id: item.transactionId,
        status: queued === 1 ? 'queued' : 'duplicate',
        message_id: messageId,
        partition_id: partitionId,
        trace_id: item.traceId,
        queueName: queue,
      };
    });
  });
  // The queues that stored their items wake their waiters even when another one refused.
  backend.notify(pushCapacity(items, results));
  const failure = failures.find((error) => error !== undefined);
  if (failure) throw failure;
  return results;
}

/*
 * Acknowledgements on the Redis backend: one lua/ack-1.lua call per queue, the acks of a batch
 * in their order (docs/broker-api.md, "Acknowledgements are idempotent").
 */
import type { AckInput, AckResult } from '../storage.js';
import { encode, type RedisBackend } from './context.js';

/** One ack's ARGV entries, in the order ack_many (lua/includes/ack-many.lua) reads them. */
export function ackArguments(ack: AckInput, partition: string): string[] {
  return [
    encode(partition),
    encode(ack.group),
    ack.transactionId,
    ack.status,
    ack.leaseId ?? '',
    ack.error ?? '',
  ];
}

export async function ack(backend: RedisBackend, acks: AckInput[]): Promise<AckResult[]> {
  const results: AckResult[] = new Array(acks.length);
  const byQueue = new Map<string, { index: number; ack: AckInput; partition: string }[]>();
  await Promise.all(
    acks.map(async (ack, index) => {
      // Known partitions resolve without a promise per ack (a batch names few partitions).
      const resolved =
        backend.registry.known(ack.partitionId) ?? (await backend.registry.resolve(ack.partitionId));
      if (!resolved) {
        results[index] = {
          index,
          transactionId: ack.transactionId,
          success: false,
          error: 'Message not found',
          queueName: null,
          partitionName: null,
          leaseReleased: false,
          dlq: false,
          repeat: false,
        };
        return;
      }
      const [queue, partition] = resolved;
      const list = byQueue.get(queue) ?? [];
      list.push({ index, ack, partition });
      byQueue.set(queue, list);
    }),
  );
  const wake: (readonly [string, number])[] = [];
  await Promise.all(
    [...byQueue].map(async ([queue, list]) => {
      list.sort((a, b) => a.index - b.index);
      const base = backend.base(queue);
      const args: string[] = [];
      for (const { ack, partition } of list) {
        args.push(...ackArguments(ack, partition));
      }
      const rows = await backend.run<[number, string, number, number, number][]>('ack', [base], args);
      // A partition id the registry knows but no message was ever stored under (a refused push
      // registers first) names no queue in the answer, as in process (differential test).
      const unknown = new Set<string>();
      const notFound = list.filter((_, position) => rows[position]?.[1] === 'Message not found');
      if (notFound.length > 0) {
        const names = [...new Set(notFound.map(({ partition }) => partition))];
        const ids = await backend.redis.hmget(`${base}parts`, ...names.map(encode));
        names.forEach((name, position) => {
          if (ids[position] === null) unknown.add(name);
        });
      }
      list.forEach(({ index, ack, partition }, position) => {
        const [ok, error, released, dlq, repeat] = rows[position] as [number, string, number, number, number];
        if (
          released === 1 ||
          (ok === 1 && repeat !== 1 && ack.status !== 'completed' && ack.status !== 'success')
        ) {
          wake.push([queue, 1]);
        }
        results[index] = {
          index,
          transactionId: ack.transactionId,
          success: ok === 1,
          error: ok === 1 ? null : error,
          queueName: unknown.has(partition) ? null : queue,
          partitionName: unknown.has(partition) ? null : partition,
          leaseReleased: released === 1,
          dlq: dlq === 1,
          repeat: repeat === 1,
        };
      });
    }),
  );
  backend.notify(wake);
  return results;
}

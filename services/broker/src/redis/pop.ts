/*
 * Pop and release on the Redis backend: lua/pop-1.lua and lua/release-1.lua, and the global
 * lease index (`lease:<leaseId>` -> queue) by which an extension finds a lease's queue.
 */
import { positionBefore, streamIdTime } from '../identifiers.js';
import type { PopRequest, PopResult } from '../storage.js';
import { decode, encode, type RedisBackend, type Reply } from './context.js';

export async function pop(backend: RedisBackend, request: PopRequest): Promise<PopResult> {
  const base = backend.base(request.queue);
  const start =
    request.subscription.mode === 'all'
      ? '0-0'
      : positionBefore(request.subscription.mode === 'new' ? backend.clock.now() : request.subscription.at);
  const reply = await backend.run<[string, [string, string, string, string, Reply[][]][]]>(
    'pop',
    [base],
    [
      encode(request.group),
      request.partition === undefined ? '' : encode(request.partition),
      request.batch,
      request.maxPartitions,
      request.leaseId,
      start,
    ],
  );
  const partitions = reply[1].map(([partition, partitionId, leaseId, expiresAt, messages]) => ({
    queue: request.queue,
    partition: decode(partition),
    partitionId,
    leaseId,
    leaseExpiresAt: Number(expiresAt),
    messages: messages.map((row) => {
      const [streamId, id, transactionId, traceId, data, producerSub, retryCount] = row as [
        string,
        string,
        string,
        string,
        string,
        string,
        number,
      ];
      return {
        id,
        transactionId,
        traceId: traceId === '' ? null : traceId,
        data,
        producerSub: producerSub === '' ? null : producerSub,
        createdAt: streamIdTime(streamId),
        retryCount: Number(retryCount),
      };
    }),
  }));
  const first = partitions[0];
  if (first) {
    // Lease extension names only the lease: this index finds its queue (and expires).
    await backend.redis.set(
      backend.key('lease', first.leaseId),
      request.queue,
      'PX',
      Math.max(1000, first.leaseExpiresAt - backend.clock.now() + 60_000),
    );
  }
  return { partitions, nextReadyAt: Number(reply[0]) };
}

/** Gives a pop's leases back without counting an attempt (its client went away). */
export async function release(backend: RedisBackend, result: PopResult, group: string): Promise<void> {
  const byQueue = new Map<string, { leaseId: string; partitions: string[] }>();
  const freed: (readonly [string, number])[] = [];
  for (const popped of result.partitions) {
    const entry = byQueue.get(popped.queue) ?? { leaseId: popped.leaseId, partitions: [] };
    entry.partitions.push(encode(popped.partition), encode(group));
    byQueue.set(popped.queue, entry);
    freed.push([popped.queue, 1]);
  }
  await Promise.all(
    [...byQueue].map(([queue, { leaseId, partitions }]) => {
      const base = backend.base(queue);
      return backend.run('release', [base], [leaseId, ...partitions]);
    }),
  );
  backend.notify(freed);
}

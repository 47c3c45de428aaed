/*
 * Pop and release on the in-process backend: the rules of lua/pop-1.lua and lua/release-1.lua
 * (a pop leases whole partitions, one consumer per partition and group).
 */
import type { PoppedPartition, PopRequest, PopResult } from '../storage.js';
import { expireLease, releaseLease } from './leases.js';
import {
  advance,
  after,
  consumerOf,
  type MemoryMessage,
  type MemoryPartition,
  type MemoryStore,
  notify,
  queueOf,
  readyOf,
  registerBeforeQueue,
  reschedule,
  resolve,
} from './state.js';

export function pop(store: MemoryStore, request: PopRequest): PopResult {
  const now = store.clock.now();
  const group = request.group;
  const start =
    request.subscription.mode === 'all'
      ? 0
      : request.subscription.mode === 'new'
        ? now
        : request.subscription.at;
  const queue = queueOf(store, request.queue, false);
  if (!queue) {
    registerBeforeQueue(store, request.queue, group, start);
    return { partitions: [], nextReadyAt: 0 };
  }
  const ready = readyOf(queue, group);
  if (!queue.groups.has(group)) {
    queue.groups.set(group, start);
    for (const name of queue.partitions.keys()) ready.set(name, now, true);
  }
  let candidates: string[];
  if (request.partition !== undefined) {
    // Still report when the group's other partitions are ready (a parked pop hands off).
    if (!queue.partitions.has(request.partition)) return { partitions: [], nextReadyAt: ready.first() };
    candidates = [request.partition];
  } else {
    candidates = ready.due(now, request.maxPartitions + 16);
  }
  const options = queue.options;
  const out: PoppedPartition[] = [];
  let remaining = request.batch;
  for (const name of candidates) {
    if (remaining <= 0 || out.length >= request.maxPartitions) break;
    const partition = queue.partitions.get(name) as MemoryPartition;
    const consumer = consumerOf(queue, partition, group);
    let skipUntil: number | undefined;
    if (consumer.lease) {
      if (consumer.lease.expiresAt > now) skipUntil = consumer.lease.expiresAt;
      else expireLease(queue, partition, group, consumer, now);
    }
    if (skipUntil === undefined && consumer.notBefore > now) skipUntil = consumer.notBefore;
    if (skipUntil === undefined && options.windowBuffer > 0) {
      const last = partition.messages.at(-1);
      if (last && last.createdAt + options.windowBuffer * 1000 > now) {
        skipUntil = last.createdAt + options.windowBuffer * 1000;
      }
    }
    if (skipUntil !== undefined) {
      ready.set(name, skipUntil);
      continue;
    }
    const picked: MemoryMessage[] = [];
    let visibleAt: number | undefined;
    let expiredAny = false;
    for (let index = after(partition, consumer.position); index < partition.messages.length; index++) {
      if (picked.length >= remaining) break;
      const message = partition.messages[index] as MemoryMessage;
      if (consumer.resolved.has(message.seq)) continue;
      if (options.ttl > 0 && message.createdAt + options.ttl * 1000 <= now) {
        resolve(queue, consumer, group, message.seq);
        expiredAny = true;
      } else if (
        options.delayedProcessing > 0 &&
        message.createdAt + options.delayedProcessing * 1000 > now
      ) {
        visibleAt = message.createdAt + options.delayedProcessing * 1000;
        break;
      } else {
        picked.push(message);
      }
    }
    if (expiredAny) advance(partition, consumer);
    if (picked.length === 0) {
      if (visibleAt !== undefined) ready.set(name, visibleAt);
      else ready.remove(name);
      continue;
    }
    const expiresAt = now + options.leaseTime * 1000;
    consumer.lease = {
      id: request.leaseId,
      expiresAt,
      upto: (picked.at(-1) as MemoryMessage).seq,
      size: picked.length,
      answered: new Set(),
    };
    ready.set(name, expiresAt);
    const holders = queue.leases.get(request.leaseId) ?? [];
    holders.push({ partition: name, group });
    queue.leases.set(request.leaseId, holders);
    out.push({
      queue: queue.name,
      partition: name,
      partitionId: partition.id,
      leaseId: request.leaseId,
      leaseExpiresAt: expiresAt,
      messages: picked.map((message) => ({
        id: message.id,
        transactionId: message.transactionId,
        traceId: message.traceId,
        data: message.data,
        producerSub: message.producerSub,
        createdAt: message.createdAt,
        retryCount: consumer.attempts.get(message.seq) ?? 0,
      })),
    });
    remaining -= picked.length;
  }
  return { partitions: out, nextReadyAt: ready.first() };
}

/** Gives a pop's leases back without counting an attempt (its client went away). */
export function release(store: MemoryStore, result: PopResult, group: string): void {
  const now = store.clock.now();
  for (const popped of result.partitions) {
    const queue = store.queues.get(popped.queue);
    const partition = queue?.partitions.get(popped.partition);
    if (!queue || !partition) continue;
    // Only a lease still held: a release never creates state (the group may be deleted since).
    const consumer = partition.consumers.get(group);
    if (!consumer || consumer.lease?.id !== popped.leaseId) continue;
    releaseLease(queue, partition, group, consumer);
    reschedule(queue, partition, group, now);
  }
  // Each released partition serves one pop per group.
  notify(
    store,
    result.partitions.map((p) => [p.queue, 1] as const),
  );
}

/*
 * The in-process backend's state and the helpers every operation shares: the counterpart of
 * the key layout and the shared functions of lua/includes/broker.lua, on plain maps. Every
 * operation runs synchronously between two awaits, which gives it the atomicity a Lua script
 * has in Redis.
 */
import type { Clock } from '@herald/redis';
import { namespaceAndTask, partitionIdOf } from '../identifiers.js';
import {
  type AvailabilityListener,
  DEFAULT_QUEUE_OPTIONS,
  type DeadLetter,
  type MessageView,
  type QueueInfo,
  type QueueOptions,
  type QueueStats,
} from '../storage.js';
import { ReadyIndex } from './ready-index.js';

export interface MemoryMessage {
  seq: number;
  id: string;
  transactionId: string;
  traceId: string | null;
  data: string;
  producerSub: string | null;
  createdAt: number;
}

export interface Lease {
  id: string;
  expiresAt: number;
  upto: number;
  size: number;
  answered: Set<number>;
}

export interface MemoryConsumer {
  position: number;
  lease: Lease | undefined;
  notBefore: number;
  resolved: Set<number>;
  attempts: Map<number, number>;
}

export interface MemoryPartition {
  name: string;
  id: string;
  messages: MemoryMessage[];
  dedup: Map<string, MemoryMessage>;
  consumers: Map<string, MemoryConsumer>;
}

export interface MemoryQueue {
  name: string;
  namespace: string;
  task: string;
  createdAt: number;
  options: QueueOptions;
  partitions: Map<string, MemoryPartition>;
  /** group -> time its subscription starts from (0: all history). */
  groups: Map<string, number>;
  ready: Map<string, ReadyIndex>;
  leases: Map<string, { partition: string; group: string }[]>;
  deadLetters: DeadLetter[];
  /** [ms, seq] of the last dead-letter id (dead-letters.ts). */
  lastDeadLetterId: readonly [number, number] | undefined;
  pushed: number;
  resolvedBy: Map<string, number>;
  leaseExpiries: number;
  /** leaseId -> the answer of each ack under it (lua `la:<leaseId>`), kept 60 s after its last ack. */
  answers: Map<string, LeaseAnswers>;
  /** Size of `answers` at which expired entries are dropped next (doubles, amortised). */
  answersSweepAt: number;
}

export interface LeaseAnswers {
  expiresAt: number;
  /** Answer per acked message, keyed by `answerKey(partitionId, transactionId)` (ack.ts). */
  byAck: Map<string, string>;
}

/** Everything the in-process backend holds, but traces and flags (storage-memory.ts). */
export interface MemoryStore {
  /** The time every operation reads (lua/includes/broker.lua `now_ms`). */
  readonly clock: Clock;
  readonly queues: Map<string, MemoryQueue>;
  /** partitionId -> [queue, partition]. */
  readonly partitionIds: Map<string, [string, string]>;
  readonly listeners: Set<AvailabilityListener>;
  /** Last message sequence number. */
  sequence: number;
  /** createdAt of the newest message: never goes back, as stream ids in Redis. */
  lastCreatedAt: number;
  statsSnapshot: QueueStats[];
  /**
   * Groups that popped or sought a queue before it existed, with where they start, as the
   * Redis backend's `groups` hash keeps them: the queue takes them when it is created, so a
   * group with subscriptionMode=new reads what is pushed after its first pop (issue #11).
   */
  readonly groupsBeforeQueue: Map<string, Map<string, number>>;
  /**
   * Ack answers of deleted queues, kept for a queue created again under the same name while
   * they last, as Redis keeps `la:<leaseId>` (60 s) past deleteQueue: a resent ack answers the
   * same on both backends.
   */
  readonly answersOfDeleted: Map<string, Map<string, LeaseAnswers>>;
}

export function createStore(clock: Clock): MemoryStore {
  return {
    clock,
    queues: new Map(),
    partitionIds: new Map(),
    listeners: new Set(),
    sequence: 0,
    lastCreatedAt: 0,
    statsSnapshot: [],
    groupsBeforeQueue: new Map(),
    answersOfDeleted: new Map(),
  };
}

/** `queues`: names (capacity unknown) or [queue, capacity] pairs (see AvailabilityListener). */
export function notify(store: MemoryStore, queues: Iterable<string | readonly [string, number]>): void {
  const capacities = new Map<string, number>();
  for (const entry of queues) {
    const [queue, capacity] = typeof entry === 'string' ? [entry, Number.POSITIVE_INFINITY] : entry;
    capacities.set(queue, (capacities.get(queue) ?? 0) + capacity);
  }
  if (capacities.size === 0) return;
  queueMicrotask(() => {
    for (const [queue, capacity] of capacities) {
      for (const listener of store.listeners) listener(queue, capacity);
    }
  });
}

export function queueOf(store: MemoryStore, name: string, create: boolean): MemoryQueue | undefined {
  let queue = store.queues.get(name);
  if (!queue && create) {
    const names = namespaceAndTask(name);
    queue = {
      name,
      ...names,
      createdAt: store.clock.now(),
      options: { ...DEFAULT_QUEUE_OPTIONS },
      partitions: new Map(),
      groups: store.groupsBeforeQueue.get(name) ?? new Map(),
      ready: new Map(),
      leases: new Map(),
      deadLetters: [],
      lastDeadLetterId: undefined,
      pushed: 0,
      resolvedBy: new Map(),
      leaseExpiries: 0,
      answers: store.answersOfDeleted.get(name) ?? new Map(),
      answersSweepAt: 1024,
    };
    store.queues.set(name, queue);
    store.groupsBeforeQueue.delete(name);
    store.answersOfDeleted.delete(name);
  }
  return queue;
}

/** Registers a group on a queue not created yet (see groupsBeforeQueue); false if it was. */
export function registerBeforeQueue(store: MemoryStore, name: string, group: string, start: number): boolean {
  let groups = store.groupsBeforeQueue.get(name);
  if (!groups) {
    groups = new Map();
    store.groupsBeforeQueue.set(name, groups);
  }
  if (groups.has(group)) return false;
  groups.set(group, start);
  return true;
}

/** By name in code-unit order (not the locale's), as the Redis backend sorts them. */
export function queuesByName(store: MemoryStore): MemoryQueue[] {
  return [...store.queues.values()].sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
}

export function readyOf(queue: MemoryQueue, group: string): ReadyIndex {
  let index = queue.ready.get(group);
  if (!index) {
    index = new ReadyIndex();
    queue.ready.set(group, index);
  }
  return index;
}

export function queueInfo(queue: MemoryQueue): QueueInfo {
  return {
    name: queue.name,
    namespace: queue.namespace,
    task: queue.task,
    createdAt: new Date(queue.createdAt).toISOString(),
    options: { ...queue.options },
    partitions: queue.partitions.size,
  };
}

export function partitionOf(store: MemoryStore, queue: MemoryQueue, name: string): MemoryPartition {
  let partition = queue.partitions.get(name);
  if (!partition) {
    const id = partitionIdOf(queue.name, name);
    partition = { name, id, messages: [], dedup: new Map(), consumers: new Map() };
    queue.partitions.set(name, partition);
    store.partitionIds.set(id, [queue.name, name]);
  }
  return partition;
}

/** The queue and partition a partition id names (lua `pids`), if both exist. */
export function locate(
  store: MemoryStore,
  partitionId: string,
): { queue: MemoryQueue; partition: MemoryPartition } | undefined {
  const names = store.partitionIds.get(partitionId);
  const queue = names && store.queues.get(names[0]);
  const partition = names && queue?.partitions.get(names[1]);
  return queue && partition ? { queue, partition } : undefined;
}

/** Retained messages of a queue (lua stats `size`). */
export function retained(queue: MemoryQueue): number {
  let size = 0;
  for (const partition of queue.partitions.values()) size += partition.messages.length;
  return size;
}

export function messageView(
  queue: MemoryQueue,
  partition: MemoryPartition,
  message: MemoryMessage,
): MessageView {
  return {
    id: message.id,
    transactionId: message.transactionId,
    traceId: message.traceId,
    queue: queue.name,
    partition: partition.name,
    partitionId: partition.id,
    data: JSON.parse(message.data) as unknown,
    producerSub: message.producerSub,
    createdAt: new Date(message.createdAt).toISOString(),
  };
}

// --- positions (lua position, advance, resolve, reschedule) ------------------------------

/** Index of the first message with seq > position (messages are in seq order). */
export function after(partition: MemoryPartition, position: number): number {
  const list = partition.messages;
  let low = 0;
  let high = list.length;
  while (low < high) {
    const middle = (low + high) >> 1;
    if ((list[middle] as MemoryMessage).seq <= position) low = middle + 1;
    else high = middle;
  }
  return low;
}

/** The position just before the first message created at or after `at`. */
export function positionAt(partition: MemoryPartition, at: number): number {
  let position = 0;
  for (const message of partition.messages) {
    if (message.createdAt >= at) break;
    position = message.seq;
  }
  return position;
}

/** A partition's consumer state for a group, created at the group's subscription start. */
export function consumerOf(queue: MemoryQueue, partition: MemoryPartition, group: string): MemoryConsumer {
  let consumer = partition.consumers.get(group);
  if (!consumer) {
    consumer = {
      position: positionAt(partition, queue.groups.get(group) ?? 0),
      lease: undefined,
      notBefore: 0,
      resolved: new Set(),
      attempts: new Map(),
    };
    partition.consumers.set(group, consumer);
  }
  return consumer;
}

/** Marks one message resolved for a group (acked, dead-lettered or expired). */
export function resolve(queue: MemoryQueue, consumer: MemoryConsumer, group: string, seq: number): void {
  if (consumer.resolved.has(seq)) return;
  consumer.resolved.add(seq);
  queue.resolvedBy.set(group, (queue.resolvedBy.get(group) ?? 0) + 1);
}

/**
 * After `message` left the partition (deleted or requeued): no consumer keeps it resolved, and
 * each moves over what it had resolved right behind it (as lua forget_entry).
 */
export function forgetMessage(partition: MemoryPartition, message: MemoryMessage): void {
  for (const consumer of partition.consumers.values()) {
    consumer.resolved.delete(message.seq);
    advance(partition, consumer);
  }
}

/** Moves the position over messages already resolved, so the resolved set stays small. */
export function advance(partition: MemoryPartition, consumer: MemoryConsumer): void {
  if (consumer.resolved.size === 0) return;
  for (let index = after(partition, consumer.position); index < partition.messages.length; index++) {
    const seq = (partition.messages[index] as MemoryMessage).seq;
    if (!consumer.resolved.delete(seq)) break;
    consumer.position = seq;
    consumer.attempts.delete(seq);
  }
}

function hasUnresolved(partition: MemoryPartition, consumer: MemoryConsumer): boolean {
  for (let index = after(partition, consumer.position); index < partition.messages.length; index++) {
    if (!consumer.resolved.has((partition.messages[index] as MemoryMessage).seq)) return true;
  }
  return false;
}

/** After a lease ends: schedule the partition for the group, or drop it from the ready index. */
export function reschedule(queue: MemoryQueue, partition: MemoryPartition, group: string, now: number): void {
  const consumer = consumerOf(queue, partition, group);
  const ready = readyOf(queue, group);
  if (hasUnresolved(partition, consumer)) ready.set(partition.name, Math.max(now, consumer.notBefore));
  else ready.remove(partition.name);
}

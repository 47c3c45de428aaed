// Over 600 lines on purpose, for now: this one class mirrors every Lua script of the Redis
// backend, and issue #11 splits it along those scripts (ready index, push, pop, ack, leases,
// retention, stats, dead letters, traces) together with a differential test against Redis.
import { isSealedText } from './encryption.js';
import { encryptionChanged, queueFull } from './errors.js';
import { namespaceAndTask, newId, partitionIdOf } from './identifiers.js';
import { applyQueueRetention, groupBacklog, queueDepth } from './retention-memory.js';
import { type GroupExtras, groupExtras, partitionStates } from './stats-memory.js';
import {
  type AckInput,
  type AckResult,
  type AvailabilityListener,
  type BrokerStorage,
  DEFAULT_QUEUE_OPTIONS,
  type DeadLetter,
  type LeaseExtension,
  type LeaseSweep,
  type MessageView,
  newestFirstPage,
  type PartitionState,
  type PoppedPartition,
  type PopRequest,
  type PopResult,
  type PushItem,
  type PushResult,
  pushCapacity,
  QUEUE_MODE,
  type QueueInfo,
  type QueueMessageState,
  type QueueOptions,
  type QueueStats,
  type SeekTarget,
  type SystemFlags,
  snapshotRates,
  type TraceEntry,
  type TraceInput,
  type TransactionOperation,
  type TransactionOutcome,
} from './storage.js';
import { type MemoryCycleHost, prepareMemoryCycle } from './streams/cycle-memory.js';
import { MemoryStreams } from './streams/memory.js';

/*
 * The in-process backend: the same rules as the Lua scripts (lua/includes/broker.lua), on
 * plain maps, for a single node without Redis. Every method runs synchronously between two
 * awaits, which gives it the atomicity a Lua script has in Redis.
 */

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

/** Partitions keyed by the time a group may find work there, without scanning all of them. */
class ReadyIndex {
  private readonly scores = new Map<string, number>();
  private heap: [number, string][] = [];

  has(partition: string): boolean {
    return this.scores.has(partition);
  }

  set(partition: string, at: number, onlyIfAbsent = false): void {
    if (onlyIfAbsent && this.scores.has(partition)) return;
    if (this.scores.get(partition) === at) return;
    this.scores.set(partition, at);
    this.push([at, partition]);
  }

  remove(partition: string): void {
    this.scores.delete(partition);
  }

  /** Up to `limit` partitions due at `now`, lowest score first; the caller re-sets or removes each. */
  due(now: number, limit: number): string[] {
    const out: string[] = [];
    const seen = new Set<string>();
    while (out.length < limit && this.heap.length > 0) {
      const top = this.heap[0] as [number, string];
      if (this.scores.get(top[1]) !== top[0] || seen.has(top[1])) {
        this.pop();
        continue;
      }
      if (top[0] > now) break;
      this.pop();
      seen.add(top[1]);
      out.push(top[1]);
    }
    // Back in the heap: a partition the caller does not touch stays due.
    for (const partition of out) this.push([this.scores.get(partition) as number, partition]);
    return out;
  }

  first(): number {
    while (this.heap.length > 0) {
      const top = this.heap[0] as [number, string];
      if (this.scores.get(top[1]) === top[0]) return top[0];
      this.pop();
    }
    return 0;
  }

  members(limit: number): string[] {
    return [...this.scores.keys()].slice(0, limit);
  }

  get size(): number {
    return this.scores.size;
  }

  private push(entry: [number, string]): void {
    const heap = this.heap;
    heap.push(entry);
    let index = heap.length - 1;
    while (index > 0) {
      const parent = (index - 1) >> 1;
      if ((heap[parent] as [number, string])[0] <= entry[0]) break;
      heap[index] = heap[parent] as [number, string];
      index = parent;
    }
    heap[index] = entry;
  }

  private pop(): void {
    const heap = this.heap;
    const last = heap.pop() as [number, string];
    if (heap.length === 0) return;
    let index = 0;
    for (;;) {
      const left = index * 2 + 1;
      if (left >= heap.length) break;
      const right = left + 1;
      const child =
        right < heap.length && (heap[right] as [number, string])[0] < (heap[left] as [number, string])[0]
          ? right
          : left;
      if ((heap[child] as [number, string])[0] >= last[0]) break;
      heap[index] = heap[child] as [number, string];
      index = child;
    }
    heap[index] = last;
  }
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
  pushed: number;
  resolvedBy: Map<string, number>;
  leaseExpiries: number;
  /** leaseId -> the answer of each ack under it (lua `la:<leaseId>`), kept 60 s after its last ack. */
  answers: Map<string, LeaseAnswers>;
  /** Size of `answers` at which expired entries are dropped next (doubles, amortised). */
  answersSweepAt: number;
}

interface LeaseAnswers {
  expiresAt: number;
  /** Answer per acked message, keyed by `answerKey(partitionId, transactionId)`. */
  byAck: Map<string, string>;
}

function queueMessageState(
  queue: string,
  partition: string,
  partitionId: string,
  message: MemoryMessage,
  status: QueueMessageState['status'],
): QueueMessageState {
  return {
    id: message.id,
    transactionId: message.transactionId,
    partitionId,
    queuePath: `${queue}/${partition}`,
    queue,
    partition,
    status,
    createdAt: new Date(message.createdAt).toISOString(),
  };
}

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

export class MemoryStorage implements BrokerStorage {
  readonly kind = 'memory';
  /** This backend's internals a streams cycle uses (streams/cycle-memory.ts). */
  private readonly cycleHost: MemoryCycleHost = {
    locate: (partitionId) => {
      const names = this.partitionIds.get(partitionId);
      const queue = names && this.queues.get(names[0]);
      const partition = names && queue?.partitions.get(names[1]);
      return queue && partition ? { queue, partition } : undefined;
    },
    consumer: (queue, partition, group) => this.consumer(queue, partition, group),
    capacityError: (items) => {
      // As lua/streams-cycle-0.lua: a clear sink payload for an encrypted queue is refused.
      const unsealed = this.unsealedQueue(items);
      if (unsealed !== undefined) throw encryptionChanged(unsealed);
      const full = this.checkCapacity(this.countFresh(items));
      return full && `Queue is full (maxSize ${full.maxSize})`;
    },
    append: (item, index, now) => this.append(item, index, now),
    notify: (queues) => this.notify(queues),
    after: (partition, position) => this.after(partition, position),
    resolve: (queue, consumer, group, seq) => this.resolve(queue, consumer, group, seq),
    deadLetter: (...args) => this.deadLetter(...args),
    releaseLease: (queue, partition, group, consumer) => this.releaseLease(queue, partition, group, consumer),
    advance: (partition, consumer) => this.advance(partition, consumer),
    reschedule: (queue, partition, group, now) => this.reschedule(queue, partition, group, now),
  };
  readonly streams = new MemoryStreams((pushItems, ack) =>
    prepareMemoryCycle(this.cycleHost, pushItems, ack),
  );
  private readonly queues = new Map<string, MemoryQueue>();
  private readonly partitionIds = new Map<string, [string, string]>();
  private readonly listeners = new Set<AvailabilityListener>();
  private readonly traces = new Map<string, TraceEntry[]>();
  private readonly tracesByNameMap = new Map<string, TraceEntry[]>();
  private systemFlags: SystemFlags = { maintenanceMode: false, popMaintenanceMode: false };
  private sequence = 0;
  private lastCreatedAt = 0;
  private statsSnapshot: QueueStats[] = [];

  /** `queues`: names (capacity unknown) or [queue, capacity] pairs (see AvailabilityListener). */
  private notify(queues: Iterable<string | readonly [string, number]>): void {
    const capacities = new Map<string, number>();
    for (const entry of queues) {
      const [queue, capacity] = typeof entry === 'string' ? [entry, Number.POSITIVE_INFINITY] : entry;
      capacities.set(queue, (capacities.get(queue) ?? 0) + capacity);
    }
    if (capacities.size === 0) return;
    queueMicrotask(() => {
      for (const [queue, capacity] of capacities) {
        for (const listener of this.listeners) listener(queue, capacity);
      }
    });
  }

  onAvailable(listener: AvailabilityListener): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  async ready(): Promise<string | undefined> {
    return undefined;
  }

  async close(): Promise<void> {
    this.listeners.clear();
  }

  private queueOf(name: string, create: boolean): MemoryQueue | undefined {
    let queue = this.queues.get(name);
    if (!queue && create) {
      const names = namespaceAndTask(name);
      queue = {
        name,
        ...names,
        createdAt: Date.now(),
        options: { ...DEFAULT_QUEUE_OPTIONS },
        partitions: new Map(),
        groups: new Map(),
        ready: new Map(),
        leases: new Map(),
        deadLetters: [],
        pushed: 0,
        resolvedBy: new Map(),
        leaseExpiries: 0,
        answers: new Map(),
        answersSweepAt: 1024,
      };
      this.queues.set(name, queue);
    }
    return queue;
  }

  private readyOf(queue: MemoryQueue, group: string): ReadyIndex {
    let index = queue.ready.get(group);
    if (!index) {
      index = new ReadyIndex();
      queue.ready.set(group, index);
    }
    return index;
  }

  private info(queue: MemoryQueue): QueueInfo {
    return {
      name: queue.name,
      namespace: queue.namespace,
      task: queue.task,
      createdAt: new Date(queue.createdAt).toISOString(),
      options: { ...queue.options },
      partitions: queue.partitions.size,
    };
  }

  async configure(
    name: string,
    options: Partial<QueueOptions>,
    names: { namespace: string; task: string },
  ): Promise<QueueInfo> {
    const queue = this.queueOf(name, true) as MemoryQueue;
    Object.assign(queue.options, options);
    queue.namespace = names.namespace;
    queue.task = names.task;
    return this.info(queue);
  }

  // --- positions -----------------------------------------------------------------------

  /** Index of the first message with seq > position. */
  private after(partition: MemoryPartition, position: number): number {
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
  private positionAt(partition: MemoryPartition, at: number): number {
    let position = 0;
    for (const message of partition.messages) {
      if (message.createdAt >= at) break;
      position = message.seq;
    }
    return position;
  }

  private consumer(queue: MemoryQueue, partition: MemoryPartition, group: string): MemoryConsumer {
    let consumer = partition.consumers.get(group);
    if (!consumer) {
      consumer = {
        position: this.positionAt(partition, queue.groups.get(group) ?? 0),
        lease: undefined,
        notBefore: 0,
        resolved: new Set(),
        attempts: new Map(),
      };
      partition.consumers.set(group, consumer);
    }
    return consumer;
  }

  private resolve(queue: MemoryQueue, consumer: MemoryConsumer, group: string, seq: number): void {
    if (consumer.resolved.has(seq)) return;
    consumer.resolved.add(seq);
    queue.resolvedBy.set(group, (queue.resolvedBy.get(group) ?? 0) + 1);
  }

  private advance(partition: MemoryPartition, consumer: MemoryConsumer): void {
    if (consumer.resolved.size === 0) return;
    for (let index = this.after(partition, consumer.position); index < partition.messages.length; index++) {
      const seq = (partition.messages[index] as MemoryMessage).seq;
      if (!consumer.resolved.delete(seq)) break;
      consumer.position = seq;
      consumer.attempts.delete(seq);
    }
  }

  private hasUnresolved(partition: MemoryPartition, consumer: MemoryConsumer): boolean {
    for (let index = this.after(partition, consumer.position); index < partition.messages.length; index++) {
      if (!consumer.resolved.has((partition.messages[index] as MemoryMessage).seq)) return true;
    }
    return false;
  }

  private reschedule(queue: MemoryQueue, partition: MemoryPartition, group: string, now: number): void {
    const consumer = this.consumer(queue, partition, group);
    const ready = this.readyOf(queue, group);
    if (this.hasUnresolved(partition, consumer)) ready.set(partition.name, Math.max(now, consumer.notBefore));
    else ready.remove(partition.name);
  }

  private releaseLease(
    queue: MemoryQueue,
    partition: MemoryPartition,
    group: string,
    consumer: MemoryConsumer,
  ): void {
    const lease = consumer.lease;
    if (!lease) return;
    consumer.lease = undefined;
    const holders = queue.leases.get(lease.id);
    if (holders) {
      const rest = holders.filter((h) => !(h.partition === partition.name && h.group === group));
      if (rest.length === 0) queue.leases.delete(lease.id);
      else queue.leases.set(lease.id, rest);
    }
  }

  private deadLetter(
    queue: MemoryQueue,
    partition: MemoryPartition,
    group: string,
    message: MemoryMessage,
    error: string,
    attempts: number,
    now: number,
  ): void {
    queue.deadLetters.push({
      dlqId: `${now}-${this.sequence++}`,
      ...this.view(queue, partition, message),
      consumerGroup: group,
      errorMessage: error,
      retryCount: attempts,
      failedAt: new Date(now).toISOString(),
    });
  }

  private failAttempt(
    queue: MemoryQueue,
    partition: MemoryPartition,
    group: string,
    consumer: MemoryConsumer,
    message: MemoryMessage,
    error: string,
    now: number,
  ): boolean {
    const attempts = (consumer.attempts.get(message.seq) ?? 0) + 1;
    consumer.attempts.set(message.seq, attempts);
    if (attempts > queue.options.retryLimit) {
      if (queue.options.deadLetterQueue)
        this.deadLetter(queue, partition, group, message, error, attempts, now);
      this.resolve(queue, consumer, group, message.seq);
      return true;
    }
    if (queue.options.retryDelay > 0) consumer.notBefore = now + queue.options.retryDelay;
    return false;
  }

  private expireLease(
    queue: MemoryQueue,
    partition: MemoryPartition,
    group: string,
    consumer: MemoryConsumer,
    now: number,
  ): void {
    const lease = consumer.lease;
    if (!lease) return;
    for (let index = this.after(partition, consumer.position); index < partition.messages.length; index++) {
      const message = partition.messages[index] as MemoryMessage;
      if (message.seq > lease.upto) break;
      if (!consumer.resolved.has(message.seq) && !lease.answered.has(message.seq)) {
        this.failAttempt(queue, partition, group, consumer, message, 'Lease expired', now);
      }
    }
    queue.leaseExpiries++;
    this.releaseLease(queue, partition, group, consumer);
    this.advance(partition, consumer);
    this.reschedule(queue, partition, group, now);
  }

  // --- push ------------------------------------------------------------------------------

  private partitionOf(queue: MemoryQueue, name: string): MemoryPartition {
    let partition = queue.partitions.get(name);
    if (!partition) {
      const id = partitionIdOf(queue.name, name);
      partition = { name, id, messages: [], dedup: new Map(), consumers: new Map() };
      queue.partitions.set(name, partition);
      this.partitionIds.set(id, [queue.name, name]);
    }
    return partition;
  }

  private retained(queue: MemoryQueue): number {
    let size = 0;
    for (const partition of queue.partitions.values()) size += partition.messages.length;
    return size;
  }

  private countFresh(items: PushItem[]): Map<string, number> {
    const fresh = new Map<string, number>();
    const seen = new Set<string>();
    for (const item of items) {
      const key = `${item.queue}\n${item.partition}\n${item.transactionId}`;
      if (seen.has(key)) continue;
      seen.add(key);
      const existing = this.queues
        .get(item.queue)
        ?.partitions.get(item.partition)
        ?.dedup.get(item.transactionId);
      if (!existing) fresh.set(item.queue, (fresh.get(item.queue) ?? 0) + 1);
    }
    return fresh;
  }

  private checkCapacity(
    fresh: Map<string, number>,
  ): { queue: string; size: number; maxSize: number } | undefined {
    for (const [name, count] of fresh) {
      const queue = this.queues.get(name);
      if (!queue || queue.options.maxSize <= 0) continue;
      const size = queueDepth(queue, (partition, group) => this.consumer(queue, partition, group));
      if (size + count > queue.options.maxSize) return { queue: name, size, maxSize: queue.options.maxSize };
    }
    return undefined;
  }

  private append(item: PushItem, index: number, now: number): PushResult {
    const queue = this.queueOf(item.queue, true) as MemoryQueue;
    const partition = this.partitionOf(queue, item.partition);
    const existing = partition.dedup.get(item.transactionId);
    if (existing) {
      return {
        index,
        transaction_id: item.transactionId,
        status: 'duplicate',
        message_id: existing.id,
        partition_id: partition.id,
        trace_id: item.traceId,
        queueName: queue.name,
      };
    }
    this.lastCreatedAt = Math.max(this.lastCreatedAt, now);
    const message: MemoryMessage = {
      seq: ++this.sequence,
      id: item.messageId,
      transactionId: item.transactionId,
      traceId: item.traceId,
      data: item.data,
      producerSub: item.producerSub,
      createdAt: this.lastCreatedAt,
    };
    partition.messages.push(message);
    partition.dedup.set(item.transactionId, message);
    queue.pushed++;
    for (const group of queue.groups.keys()) this.readyOf(queue, group).set(partition.name, now, true);
    return {
      index,
      transaction_id: item.transactionId,
      status: 'queued',
      message_id: message.id,
      partition_id: partition.id,
      trace_id: item.traceId,
      queueName: queue.name,
    };
  }

  /** As the Redis scripts: a clear payload for a queue with encryptionEnabled is refused whole. */
  private unsealedQueue(items: readonly PushItem[]): string | undefined {
    return items.find(
      (item) => this.queues.get(item.queue)?.options.encryptionEnabled === true && !isSealedText(item.data),
    )?.queue;
  }

  async push(items: PushItem[]): Promise<PushResult[]> {
    const unsealed = this.unsealedQueue(items);
    if (unsealed !== undefined) throw encryptionChanged(unsealed);
    const full = this.checkCapacity(this.countFresh(items));
    if (full) throw queueFull(full.queue, full.size, full.maxSize);
    const now = Date.now();
    const results = items.map((item, index) => this.append(item, index, now));
    this.notify(pushCapacity(items, results));
    return results;
  }

  // --- pop -------------------------------------------------------------------------------

  async pop(request: PopRequest): Promise<PopResult> {
    const queue = this.queueOf(request.queue, false);
    if (!queue) return { partitions: [], nextReadyAt: 0 };
    const now = Date.now();
    const group = request.group;
    const ready = this.readyOf(queue, group);
    if (!queue.groups.has(group)) {
      const start =
        request.subscription.mode === 'all'
          ? 0
          : request.subscription.mode === 'new'
            ? now
            : request.subscription.at;
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
      const consumer = this.consumer(queue, partition, group);
      let skipUntil: number | undefined;
      if (consumer.lease) {
        if (consumer.lease.expiresAt > now) skipUntil = consumer.lease.expiresAt;
        else this.expireLease(queue, partition, group, consumer, now);
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
      for (let index = this.after(partition, consumer.position); index < partition.messages.length; index++) {
        if (picked.length >= remaining) break;
        const message = partition.messages[index] as MemoryMessage;
        if (consumer.resolved.has(message.seq)) continue;
        if (options.ttl > 0 && message.createdAt + options.ttl * 1000 <= now) {
          this.resolve(queue, consumer, group, message.seq);
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
      if (expiredAny) this.advance(partition, consumer);
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

  async release(result: PopResult, group: string): Promise<void> {
    const now = Date.now();
    for (const popped of result.partitions) {
      const queue = this.queues.get(popped.queue);
      const partition = queue?.partitions.get(popped.partition);
      if (!queue || !partition) continue;
      const consumer = this.consumer(queue, partition, group);
      if (consumer.lease?.id !== popped.leaseId) continue;
      this.releaseLease(queue, partition, group, consumer);
      this.reschedule(queue, partition, group, now);
    }
    // Each released partition serves one pop per group.
    this.notify(result.partitions.map((p) => [p.queue, 1] as const));
  }

  // --- ack -------------------------------------------------------------------------------

  private locate(ack: AckInput): { queue: MemoryQueue; partition: MemoryPartition } | undefined {
    const names = this.partitionIds.get(ack.partitionId);
    const queue = names && this.queues.get(names[0]);
    const partition = names && queue?.partitions.get(names[1]);
    return queue && partition ? { queue, partition } : undefined;
  }

  /**
   * The same rules as the Lua ack (broker.lua, ack_repeat): an ack that repeats one already
   * applied is a success flagged `repeat` (its `dlq` what the first answer said) and changes
   * nothing; under a lease the recorded answer decides, without one a resolved message repeats
   * a completed/success ack.
   */
  private checkAck(
    ack: AckInput,
    now: number,
  ):
    | { queue: MemoryQueue; partition: MemoryPartition; repeat: { dlq: boolean } }
    | { queue: MemoryQueue; partition: MemoryPartition; message: MemoryMessage; repeat?: undefined }
    | string {
    const located = this.locate(ack);
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
    const consumer = this.consumer(located.queue, located.partition, ack.group);
    const resolved = message.seq <= consumer.position || consumer.resolved.has(message.seq);
    if (ack.leaseId) {
      const lease = consumer.lease;
      if (!lease || lease.id !== ack.leaseId || lease.expiresAt <= now) return 'Invalid or expired lease';
    } else if (resolved && ackClass(ack.status) === 'done') {
      return { ...located, repeat: { dlq: false } };
    }
    if (resolved) return 'Message already acknowledged';
    return { ...located, message };
  }

  private rememberAck(queue: MemoryQueue, ack: AckInput, now: number, answer: string): void {
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

  private applyAck(ack: AckInput, index: number, now: number): AckResult {
    const checked = this.checkAck(ack, now);
    if (typeof checked === 'string') {
      const names = this.partitionIds.get(ack.partitionId);
      return ackResult(index, ack, names?.[0] ?? null, names?.[1] ?? null, { error: checked });
    }
    const { queue, partition } = checked;
    if (checked.repeat) {
      return ackResult(index, ack, queue.name, partition.name, { dlq: checked.repeat.dlq, repeat: true });
    }
    const { message } = checked;
    const group = ack.group;
    const consumer = this.consumer(queue, partition, group);
    const lease = consumer.lease;
    const leased = lease !== undefined && lease.expiresAt > now && message.seq <= lease.upto;
    let dlq = false;
    if (VALID_STATUS_COMPLETED.has(ack.status)) {
      this.resolve(queue, consumer, group, message.seq);
    } else if (ack.status === 'dlq') {
      if (queue.options.deadLetterQueue) {
        this.deadLetter(
          queue,
          partition,
          group,
          message,
          ack.error ?? '',
          consumer.attempts.get(message.seq) ?? 0,
          now,
        );
      }
      this.resolve(queue, consumer, group, message.seq);
      dlq = true;
    } else {
      dlq = this.failAttempt(queue, partition, group, consumer, message, ack.error ?? '', now);
    }
    if (ack.leaseId && lease) {
      this.rememberAck(queue, ack, now, `${ackClass(ack.status)}:${dlq ? 1 : 0}`);
    }
    let released = false;
    if (leased && lease) {
      lease.answered.add(message.seq);
      if (lease.answered.size >= lease.size) {
        this.releaseLease(queue, partition, group, consumer);
        released = true;
      }
    }
    this.advance(partition, consumer);
    if (released || !lease) this.reschedule(queue, partition, group, now);
    return ackResult(index, ack, queue.name, partition.name, { leaseReleased: released, dlq });
  }

  async ack(acks: AckInput[]): Promise<AckResult[]> {
    const now = Date.now();
    const results = acks.map((ack, index) => this.applyAck(ack, index, now));
    this.notify(
      results
        .filter(
          (r, i) =>
            r.leaseReleased || (r.success && !VALID_STATUS_COMPLETED.has((acks[i] as AckInput).status)),
        )
        .map((r) => [r.queueName as string, 1] as const),
    );
    return results;
  }

  async transaction(operations: TransactionOperation[]): Promise<TransactionOutcome> {
    const now = Date.now();
    const acked = new Set<string>();
    for (const [index, operation] of operations.entries()) {
      if (operation.type !== 'ack') continue;
      const checked = this.checkAck(operation.ack, now);
      if (typeof checked === 'string') return { success: false, error: checked, failedIndex: index };
      const key = `${operation.ack.partitionId}\n${operation.ack.group}\n${operation.ack.transactionId}`;
      if (acked.has(key))
        return { success: false, error: 'Message already acknowledged', failedIndex: index };
      acked.add(key);
    }
    const pushes = operations.flatMap((operation) => (operation.type === 'push' ? [operation.item] : []));
    const unsealed = this.unsealedQueue(pushes);
    if (unsealed !== undefined) throw encryptionChanged(unsealed);
    const full = this.checkCapacity(this.countFresh(pushes));
    if (full) return { success: false, error: `Queue is full (maxSize ${full.maxSize})`, failedIndex: -1 };
    const touched = new Set<string>();
    const results = operations.map((operation, index) => {
      if (operation.type === 'push') {
        const pushed = this.append(operation.item, index, now);
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
      const result = this.applyAck(operation.ack, index, now);
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
    this.notify(touched);
    return { success: true, results };
  }

  async extendLease(leaseId: string, seconds: number): Promise<LeaseExtension> {
    const now = Date.now();
    for (const queue of this.queues.values()) {
      const holders = queue.leases.get(leaseId);
      if (!holders) continue;
      let earliest: number | undefined;
      let expired = false;
      for (const { partition: name, group } of holders) {
        const partition = queue.partitions.get(name);
        const consumer = partition?.consumers.get(group);
        const lease = consumer?.lease;
        if (!lease || lease.id !== leaseId) continue;
        if (lease.expiresAt <= now) {
          expired = true;
          continue;
        }
        lease.expiresAt = Math.max(lease.expiresAt, now + seconds * 1000);
        const ready = this.readyOf(queue, group);
        if (ready.has(name)) ready.set(name, lease.expiresAt);
        earliest = earliest === undefined ? lease.expiresAt : Math.min(earliest, lease.expiresAt);
      }
      if (earliest === undefined) {
        return {
          leaseId,
          success: false,
          error: expired ? 'Lease already expired' : 'Lease not active',
          expiresAt: null,
        };
      }
      return { leaseId, success: true, error: null, expiresAt: new Date(earliest).toISOString() };
    }
    return { leaseId, success: false, error: 'Lease not found', expiresAt: null };
  }

  // --- reads and administration ------------------------------------------------------------

  async listQueues(): Promise<QueueInfo[]> {
    return [...this.queues.values()].sort((a, b) => a.name.localeCompare(b.name)).map((q) => this.info(q));
  }

  async getQueue(name: string): Promise<QueueInfo | undefined> {
    const queue = this.queues.get(name);
    return queue && this.info(queue);
  }

  async deleteQueue(name: string): Promise<boolean> {
    const queue = this.queues.get(name);
    if (!queue) return false;
    for (const partition of queue.partitions.values()) this.partitionIds.delete(partition.id);
    this.queues.delete(name);
    // As the Redis backend drops its stats field: a deleted queue leaves the gauges at once.
    this.statsSnapshot = this.statsSnapshot.filter((stats) => stats.queue !== name);
    return true;
  }

  private view(queue: MemoryQueue, partition: MemoryPartition, message: MemoryMessage): MessageView {
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

  async listMessages(filter: { queue: string; partition?: string; limit: number }): Promise<MessageView[]> {
    const queue = this.queues.get(filter.queue);
    if (!queue) return [];
    const names = filter.partition === undefined ? [...queue.partitions.keys()].sort() : [filter.partition];
    const out: MessageView[] = [];
    for (const name of names) {
      const partition = queue.partitions.get(name);
      if (!partition) continue;
      for (const message of partition.messages) {
        if (out.length >= filter.limit) return out;
        out.push(this.view(queue, partition, message));
      }
    }
    return out;
  }

  async listQueueMessages(filter: {
    queue: string;
    limit: number;
    offset: number;
  }): Promise<QueueMessageState[]> {
    const queue = this.queues.get(filter.queue);
    if (!queue) return [];
    const now = Date.now();
    const dead = new Set(
      queue.deadLetters
        .filter((letter) => letter.consumerGroup === QUEUE_MODE)
        .map((letter) => `${letter.partitionId}\n${letter.transactionId}`),
    );
    const rows: { at: number; id: string; row: QueueMessageState }[] = [];
    for (const partition of queue.partitions.values()) {
      const consumer = partition.consumers.get(QUEUE_MODE);
      const lease = consumer?.lease && consumer.lease.expiresAt > now ? consumer.lease : undefined;
      for (const message of partition.messages.slice(-(filter.offset + filter.limit))) {
        const resolved =
          consumer !== undefined && (message.seq <= consumer.position || consumer.resolved.has(message.seq));
        const status = dead.has(`${partition.id}\n${message.transactionId}`)
          ? 'dead_letter'
          : resolved
            ? 'completed'
            : lease && message.seq <= lease.upto
              ? 'processing'
              : 'pending';
        rows.push({
          at: message.createdAt,
          id: message.id,
          row: queueMessageState(queue.name, partition.name, partition.id, message, status),
        });
      }
    }
    return newestFirstPage(rows, filter.offset, filter.limit);
  }

  async getMessage(partitionId: string, transactionId: string): Promise<MessageView | undefined> {
    const names = this.partitionIds.get(partitionId);
    const queue = names && this.queues.get(names[0]);
    const partition = names && queue?.partitions.get(names[1]);
    const message = partition?.dedup.get(transactionId);
    return queue && partition && message ? this.view(queue, partition, message) : undefined;
  }

  async deleteMessage(partitionId: string, transactionId: string): Promise<boolean> {
    const names = this.partitionIds.get(partitionId);
    const partition = names && this.queues.get(names[0])?.partitions.get(names[1]);
    const message = partition?.dedup.get(transactionId);
    if (!partition || !message) return false;
    partition.dedup.delete(transactionId);
    partition.messages.splice(partition.messages.indexOf(message), 1);
    for (const consumer of partition.consumers.values()) consumer.resolved.delete(message.seq);
    return true;
  }

  async listDeadLetters(filter: {
    queue: string;
    group?: string;
    limit: number;
    offset: number;
  }): Promise<{ messages: DeadLetter[]; total: number }> {
    const letters = (this.queues.get(filter.queue)?.deadLetters ?? []).filter(
      (letter) => filter.group === undefined || letter.consumerGroup === filter.group,
    );
    return { messages: letters.slice(filter.offset, filter.offset + filter.limit), total: letters.length };
  }

  async requeueDeadLetters(name: string, dlqIds: string[]): Promise<number> {
    const queue = this.queues.get(name);
    if (!queue) return 0;
    const now = Date.now();
    let count = 0;
    // One pass over the DLQ, not one search per id (10,000 ids × a long DLQ).
    const letters = new Map(queue.deadLetters.map((letter) => [letter.dlqId, letter]));
    const requeued = new Set<DeadLetter>();
    for (const dlqId of dlqIds) {
      const letter = letters.get(dlqId);
      if (!letter || requeued.has(letter)) continue;
      requeued.add(letter);
      const partition = this.partitionOf(queue, letter.partition);
      const old = partition.dedup.get(letter.transactionId);
      if (old) {
        partition.dedup.delete(letter.transactionId);
        const at = partition.messages.indexOf(old);
        if (at >= 0) partition.messages.splice(at, 1);
        for (const consumer of partition.consumers.values()) consumer.resolved.delete(old.seq);
      }
      this.append(
        {
          queue: name,
          partition: letter.partition,
          transactionId: letter.transactionId,
          messageId: newId(),
          traceId: letter.traceId,
          data: JSON.stringify(letter.data),
          producerSub: letter.producerSub,
        },
        0,
        now,
      );
      queue.pushed--;
      count++;
    }
    if (requeued.size > 0) queue.deadLetters = queue.deadLetters.filter((letter) => !requeued.has(letter));
    if (count > 0) this.notify([name]);
    return count;
  }

  async partitionStates(name: string): Promise<PartitionState[]> {
    const queue = this.queues.get(name);
    return queue ? partitionStates(queue, (partition, group) => this.consumer(queue, partition, group)) : [];
  }

  async groupsOf(name: string): Promise<string[]> {
    return [...(this.queues.get(name)?.groups.keys() ?? [])].sort();
  }

  async seek(name: string, group: string, only: string | undefined, target: SeekTarget): Promise<number> {
    const queue = this.queueOf(name, false);
    if (!queue) return 0;
    if (!queue.groups.has(group)) queue.groups.set(group, 0);
    const now = Date.now();
    const names =
      only === undefined ? [...queue.partitions.keys()] : queue.partitions.has(only) ? [only] : [];
    for (const partitionName of names) {
      const partition = queue.partitions.get(partitionName) as MemoryPartition;
      const existing = partition.consumers.get(group);
      if (existing) this.releaseLease(queue, partition, group, existing);
      partition.consumers.delete(group);
      const consumer = this.consumer(queue, partition, group);
      consumer.position =
        'toEnd' in target
          ? (partition.messages.at(-1)?.seq ?? 0)
          : this.positionAt(partition, target.timestamp);
      this.reschedule(queue, partition, group, now);
    }
    this.notify([name]);
    return names.length;
  }

  async deleteGroup(name: string, group: string): Promise<boolean> {
    const queue = this.queues.get(name);
    if (!queue) return false;
    const existed = queue.groups.delete(group);
    for (const partition of queue.partitions.values()) {
      const consumer = partition.consumers.get(group);
      if (consumer) this.releaseLease(queue, partition, group, consumer);
      partition.consumers.delete(group);
    }
    queue.ready.delete(group);
    queue.resolvedBy.delete(group);
    return existed;
  }

  /** Lists share the one entry object; with no TTL here, key counts are capped instead. */
  async addTrace(trace: TraceInput): Promise<TraceEntry> {
    const entry: TraceEntry = { ...trace, id: newId(), createdAt: new Date().toISOString() };
    appendCapped(this.traces, `${trace.partitionId}\n${trace.transactionId}`, entry, 100);
    for (const name of trace.traceNames) appendCapped(this.tracesByNameMap, name, entry, 1000);
    return entry;
  }

  async tracesOf(partitionId: string, transactionId: string): Promise<TraceEntry[]> {
    return this.traces.get(`${partitionId}\n${transactionId}`) ?? [];
  }

  async tracesByName(name: string, limit: number): Promise<TraceEntry[]> {
    return (this.tracesByNameMap.get(name) ?? []).slice(-limit);
  }

  async traceNames(limit: number): Promise<{ name: string; count: number }[]> {
    return [...this.tracesByNameMap]
      .map(([name, list]) => ({ name, count: list.length }))
      .sort((a, b) => b.count - a.count)
      .slice(0, limit);
  }

  async flags(): Promise<SystemFlags> {
    return { ...this.systemFlags };
  }

  async setFlags(flags: Partial<SystemFlags>): Promise<SystemFlags> {
    this.systemFlags = { ...this.systemFlags, ...flags };
    return this.flags();
  }

  // --- maintenance ---------------------------------------------------------------------------

  async sweepLeases(): Promise<LeaseSweep> {
    const now = Date.now();
    const expired: { queue: string; count: number }[] = [];
    for (const queue of this.queues.values()) {
      let count = 0;
      for (const holders of [...queue.leases.values()]) {
        for (const { partition: name, group } of [...holders]) {
          const partition = queue.partitions.get(name);
          const consumer = partition?.consumers.get(group);
          if (partition && consumer?.lease && consumer.lease.expiresAt <= now) {
            this.expireLease(queue, partition, group, consumer, now);
            count++;
          }
        }
      }
      if (count > 0) expired.push({ queue: queue.name, count });
    }
    this.notify(expired.map((e) => e.queue));
    return { expired };
  }

  async applyRetention(): Promise<number> {
    const now = Date.now();
    let deleted = 0;
    for (const queue of this.queues.values()) {
      deleted += applyQueueRetention(queue, now, (partition, group) =>
        this.consumer(queue, partition, group),
      );
    }
    return deleted;
  }

  async refreshStats(): Promise<QueueStats[]> {
    const now = Date.now();
    const previous = new Map(this.statsSnapshot.map((stats) => [stats.queue, stats]));
    this.statsSnapshot = [...this.queues.values()].map((queue) => {
      const consumerOf = (partition: MemoryPartition, group: string) =>
        this.consumer(queue, partition, group);
      const { leasedMessages, leasedAnswered, extras } = groupExtras(queue, consumerOf, now);
      const groups = [...queue.groups.keys()].map((group) => ({
        group,
        resolved: queue.resolvedBy.get(group) ?? 0,
        lag: groupBacklog(queue, group, consumerOf),
        ...(extras.get(group) as GroupExtras),
      }));
      const pending = groups.length === 0 ? this.retained(queue) : Math.max(...groups.map((g) => g.lag));
      let oldest = 0;
      let activeLeases = 0;
      for (const partition of queue.partitions.values()) {
        for (const [group] of queue.groups) {
          const consumer = this.consumer(queue, partition, group);
          if (consumer.lease) activeLeases++;
          const first = partition.messages[this.after(partition, consumer.position)];
          if (first && (oldest === 0 || first.createdAt < oldest)) oldest = first.createdAt;
        }
      }
      return {
        queue: queue.name,
        namespace: queue.namespace,
        task: queue.task,
        partitions: queue.partitions.size,
        pushed: queue.pushed,
        retained: this.retained(queue),
        pending,
        leasedMessages,
        leasedAnswered,
        oldestPendingAgeSeconds: oldest === 0 || pending === 0 ? 0 : (now - oldest) / 1000,
        deadLetters: queue.deadLetters.length,
        leaseExpiries: queue.leaseExpiries,
        activeLeases,
        ...snapshotRates(previous.get(queue.name), queue.pushed, groups, now),
        groups,
        at: now,
      };
    });
    return this.statsSnapshot;
  }

  async cachedStats(): Promise<QueueStats[]> {
    return this.statsSnapshot;
  }
}

/** Distinct keys kept per trace index (oldest first out): the memory backend has no TTL. */
const TRACE_KEYS_KEPT = 10_000;

function appendCapped<T>(map: Map<string, T[]>, key: string, value: T, perKey: number): void {
  const list = map.get(key);
  if (list) {
    list.push(value);
    if (list.length > perKey) list.shift();
    return;
  }
  if (map.size >= TRACE_KEYS_KEPT) map.delete(map.keys().next().value as string);
  map.set(key, [value]);
}

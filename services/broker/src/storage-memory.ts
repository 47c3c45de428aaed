/*
 * The in-process backend: the same rules as the Lua scripts (lua/*.lua), on plain maps, for a
 * single node without Redis. This class only delegates; each concern lives in memory/, named
 * as its script: push.ts, pop.ts (and release), ack.ts, transaction.ts, leases.ts (expiry,
 * extension, sweep), dead-letters.ts (failed attempts, requeue), retention.ts, stats.ts,
 * groups.ts (seek, delete), queues.ts, messages.ts, traces.ts; state.ts holds the maps and the
 * helpers they share (lua/includes/broker.lua), ready-index.ts the `ready:<g>` index.
 * Every operation runs synchronously between two awaits, which gives it the atomicity a Lua
 * script has in Redis.
 */
import { type Clock, systemClock } from '@herald/redis';
import { ack } from './memory/ack.js';
import { listDeadLetters, requeueDeadLetters } from './memory/dead-letters.js';
import { deleteGroup, groupsOf, seek } from './memory/groups.js';
import { extendLease, sweepLeases } from './memory/leases.js';
import { deleteMessage, getMessage, listMessages, listQueueMessages } from './memory/messages.js';
import { partitionStates } from './memory/partition-stats.js';
import { pop, release } from './memory/pop.js';
import { push } from './memory/push.js';
import { configure, deleteQueue, getQueue, listQueues } from './memory/queues.js';
import { applyRetention } from './memory/retention.js';
import { createStore, type MemoryStore } from './memory/state.js';
import { refreshStats } from './memory/stats.js';
import { MemoryTraces } from './memory/traces.js';
import { transaction } from './memory/transaction.js';
import type {
  AckInput,
  AckResult,
  AvailabilityListener,
  BrokerStorage,
  DeadLetter,
  LeaseExtension,
  LeaseSweep,
  MessageView,
  PartitionState,
  PopRequest,
  PopResult,
  PushItem,
  PushResult,
  QueueInfo,
  QueueMessageState,
  QueueOptions,
  QueueStats,
  SeekTarget,
  SystemFlags,
  TraceEntry,
  TraceInput,
  TransactionOperation,
  TransactionOutcome,
} from './storage.js';
import { prepareMemoryCycle } from './streams/cycle-memory.js';
import { MemoryStreams } from './streams/memory.js';

export interface MemoryStorageOptions {
  /** The time every operation reads (default: the system clock); tests move their own. */
  readonly clock?: Clock;
}

export class MemoryStorage implements BrokerStorage {
  readonly kind = 'memory';
  private readonly store: MemoryStore;
  private readonly traces: MemoryTraces;
  private systemFlags: SystemFlags = { maintenanceMode: false, popMaintenanceMode: false };
  readonly streams: MemoryStreams;

  constructor(options: MemoryStorageOptions = {}) {
    const clock = options.clock ?? systemClock;
    this.store = createStore(clock);
    this.traces = new MemoryTraces(clock);
    this.streams = new MemoryStreams(
      (pushItems, request) => prepareMemoryCycle(this.store, pushItems, request),
      clock,
    );
  }

  onAvailable(listener: AvailabilityListener): () => void {
    this.store.listeners.add(listener);
    return () => this.store.listeners.delete(listener);
  }

  async ready(): Promise<string | undefined> {
    return undefined;
  }

  async close(): Promise<void> {
    this.store.listeners.clear();
  }

  async configure(
    name: string,
    options: Partial<QueueOptions>,
    names: { namespace: string; task: string },
  ): Promise<QueueInfo> {
    return configure(this.store, name, options, names);
  }

  async push(items: PushItem[]): Promise<PushResult[]> {
    return push(this.store, items);
  }

  async pop(request: PopRequest): Promise<PopResult> {
    return pop(this.store, request);
  }

  async release(result: PopResult, group: string): Promise<void> {
    release(this.store, result, group);
  }

  async ack(acks: AckInput[]): Promise<AckResult[]> {
    return ack(this.store, acks);
  }

  async transaction(operations: TransactionOperation[]): Promise<TransactionOutcome> {
    return transaction(this.store, operations);
  }

  async extendLease(leaseId: string, seconds: number): Promise<LeaseExtension> {
    return extendLease(this.store, leaseId, seconds);
  }

  async listQueues(): Promise<QueueInfo[]> {
    return listQueues(this.store);
  }

  async getQueue(name: string): Promise<QueueInfo | undefined> {
    return getQueue(this.store, name);
  }

  async deleteQueue(name: string): Promise<boolean> {
    return deleteQueue(this.store, name);
  }

  async listMessages(filter: { queue: string; partition?: string; limit: number }): Promise<MessageView[]> {
    return listMessages(this.store, filter);
  }

  async listQueueMessages(filter: {
    queue: string;
    limit: number;
    offset: number;
  }): Promise<QueueMessageState[]> {
    return listQueueMessages(this.store, filter);
  }

  async getMessage(partitionId: string, transactionId: string): Promise<MessageView | undefined> {
    return getMessage(this.store, partitionId, transactionId);
  }

  async deleteMessage(partitionId: string, transactionId: string): Promise<boolean> {
    return deleteMessage(this.store, partitionId, transactionId);
  }

  async listDeadLetters(filter: {
    queue: string;
    group?: string;
    limit: number;
    offset: number;
  }): Promise<{ messages: DeadLetter[]; total: number }> {
    return listDeadLetters(this.store, filter);
  }

  async requeueDeadLetters(name: string, dlqIds: string[]): Promise<number> {
    return requeueDeadLetters(this.store, name, dlqIds);
  }

  async partitionStates(name: string): Promise<PartitionState[]> {
    const queue = this.store.queues.get(name);
    return queue ? partitionStates(queue, this.store.clock.now()) : [];
  }

  async groupsOf(name: string): Promise<string[]> {
    return groupsOf(this.store, name);
  }

  async seek(name: string, group: string, only: string | undefined, target: SeekTarget): Promise<number> {
    return seek(this.store, name, group, only, target);
  }

  async deleteGroup(name: string, group: string): Promise<boolean> {
    return deleteGroup(this.store, name, group);
  }

  async addTrace(trace: TraceInput): Promise<TraceEntry> {
    return this.traces.add(trace);
  }

  async tracesOf(partitionId: string, transactionId: string): Promise<TraceEntry[]> {
    return this.traces.ofMessage(partitionId, transactionId);
  }

  async tracesByName(name: string, limit: number): Promise<TraceEntry[]> {
    return this.traces.named(name, limit);
  }

  async traceNames(limit: number): Promise<{ name: string; count: number }[]> {
    return this.traces.names(limit);
  }

  async flags(): Promise<SystemFlags> {
    return { ...this.systemFlags };
  }

  async setFlags(flags: Partial<SystemFlags>): Promise<SystemFlags> {
    this.systemFlags = { ...this.systemFlags, ...flags };
    return this.flags();
  }

  async sweepLeases(): Promise<LeaseSweep> {
    return sweepLeases(this.store);
  }

  async applyRetention(): Promise<number> {
    return applyRetention(this.store);
  }

  async refreshStats(): Promise<QueueStats[]> {
    return refreshStats(this.store);
  }

  async cachedStats(): Promise<QueueStats[]> {
    return this.store.statsSnapshot;
  }
}

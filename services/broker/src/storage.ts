/**
 * The storage port: what the broker needs from a backend, one interface per role (below). One
 * backend implements them, storage-redis.ts with one class per role in redis/, on Redis (any
 * number of nodes) or on the embedded engine (storage-embedded.ts: one process, no Redis); the
 * contract suite (test/contract.test.ts) runs against both. Names here are the client's names
 * (queue, partition, group), never encoded; answers are the broker's own shapes, and
 * routes/wire.ts gives them Queen's names.
 */

import type { TenantLimits } from '@herald/limits';
import type { PushItem, PushResult } from './push-item.js';
import type { StreamsStorage } from './streams/types.js';
import type { ReadBudget } from './view-budget.js';

export type { PushItem, PushResult } from './push-item.js';

export const QUEUE_MODE = '__QUEUE_MODE__';
export const DEFAULT_PARTITION = 'Default';

/** Queue options (Queen's names and units: seconds, except retryDelay in milliseconds). */
export interface QueueOptions {
  leaseTime: number;
  retryLimit: number;
  retryDelay: number;
  delayedProcessing: number;
  windowBuffer: number;
  maxSize: number;
  ttl: number;
  retentionSeconds: number;
  completedRetentionSeconds: number;
  retentionEnabled: boolean;
  deadLetterQueue: boolean;
  dlqAfterMaxRetries: boolean;
  priority: number;
  encryptionEnabled: boolean;
  maxWaitTimeSeconds: number;
  /**
   * Herald's queue -> topic bridge (docs/broker-outbox.md): the hub topic template each event of
   * a message becomes an update on; '' (the default): not bridged.
   */
  bridgeTopic: string;
  /** Which events become updates: a message pushed, completed (by each group), or both. */
  bridgeOn: BridgeEvents;
  /** The bridge's updates are private (only subscribers whose token allows the topic get them). */
  bridgePrivate: boolean;
}

export type BridgeEvents = 'push' | 'completed' | 'both';

export const DEFAULT_QUEUE_OPTIONS: Readonly<QueueOptions> = {
  leaseTime: 300,
  retryLimit: 3,
  retryDelay: 0,
  delayedProcessing: 0,
  windowBuffer: 0,
  maxSize: 0,
  ttl: 0,
  retentionSeconds: 0,
  completedRetentionSeconds: 0,
  retentionEnabled: false,
  deadLetterQueue: true,
  dlqAfterMaxRetries: true,
  priority: 0,
  encryptionEnabled: false,
  maxWaitTimeSeconds: 0,
  bridgeTopic: '',
  bridgeOn: 'push',
  bridgePrivate: false,
};

export interface QueueInfo {
  name: string;
  namespace: string;
  task: string;
  createdAt: string;
  options: QueueOptions;
  partitions: number;
}

export type SubscriptionStart = { mode: 'all' } | { mode: 'new' } | { mode: 'from'; at: number };

export interface PopRequest {
  queue: string;
  /** undefined: any partition with work. */
  partition: string | undefined;
  group: string;
  batch: number;
  maxPartitions: number;
  leaseId: string;
  subscription: SubscriptionStart;
}

export interface StoredMessage {
  id: string;
  transactionId: string;
  traceId: string | null;
  /** JSON text. */
  data: string;
  producerSub: string | null;
  createdAt: number;
  retryCount: number;
}

export interface PoppedPartition {
  queue: string;
  partition: string;
  partitionId: string;
  leaseId: string;
  leaseExpiresAt: number;
  messages: StoredMessage[];
}

export interface PopResult {
  partitions: PoppedPartition[];
  /** When (ms) a delayed, retried or leased partition of this group becomes poppable; 0: unknown. */
  nextReadyAt: number;
}

export type AckStatus = 'completed' | 'success' | 'failed' | 'retry' | 'dlq';

export interface AckInput {
  transactionId: string;
  partitionId: string;
  status: AckStatus;
  group: string;
  leaseId: string | null;
  error: string | null;
}

/** What one ack did (routes/wire.ts gives it Queen's names). */
export interface AckResult {
  transactionId: string;
  success: boolean;
  error: string | null;
  /** Where the message lives; null when its partition id names no stored message. */
  queue: string | null;
  partition: string | null;
  leaseReleased: boolean;
  dlq: boolean;
  /**
   * The ack repeats one already applied (a client retry, or a resent script): nothing changed;
   * `dlq` is what the first answer reported (docs/broker-api.md, "Acknowledgements are idempotent").
   */
  repeat: boolean;
}

/** A hub update a transaction publishes atomically with its pushes and acks (docs/broker-outbox.md). */
export interface HubUpdate {
  /** The update id: fixed before the transaction runs, so the hub applies it once. */
  id: string;
  topics: string[];
  data: string;
  private: boolean;
  /** The SSE event type; undefined: none. */
  type: string | undefined;
}

export type TransactionOperation =
  | { type: 'push'; item: PushItem }
  | { type: 'ack'; ack: AckInput }
  | { type: 'publish'; update: HubUpdate };

export type TransactionOutcome =
  | {
      success: true;
      results: TransactionOperationResult[];
      /**
       * Across Redis Cluster slots: ms from the commit to the last share applied, when a reader
       * of another slot could see the commit's slot changed and not yet its own.
       */
      applyWindowMs?: number;
    }
  | { success: false; error: string; failedIndex: number };

export type TransactionOperationResult =
  | ({ type: 'push' } & PushResult)
  | { type: 'ack'; transactionId: string; dlq: boolean; repeat: boolean }
  | { type: 'publish'; id: string };

export interface LeaseExtension {
  leaseId: string;
  success: boolean;
  error: string | null;
  /** When (ms) the extended lease expires; null when not extended. */
  expiresAt: number | null;
}

export interface MessageView {
  id: string;
  transactionId: string;
  traceId: string | null;
  queue: string;
  partition: string;
  partitionId: string;
  data: unknown;
  producerSub: string | null;
  createdAt: string;
}

/** A message with its queue-mode state (routes/wire.ts gives it Queen's status-view shape). */
export interface QueueMessageState {
  id: string;
  transactionId: string;
  partitionId: string;
  queue: string;
  partition: string;
  status: 'pending' | 'processing' | 'completed' | 'dead_letter';
  createdAt: string;
}

export interface DeadLetter extends MessageView {
  dlqId: string;
  consumerGroup: string;
  errorMessage: string;
  retryCount: number;
  failedAt: string;
}

export interface QueueStats {
  queue: string;
  namespace: string;
  task: string;
  partitions: number;
  pushed: number;
  retained: number;
  pending: number;
  /** Messages of active leases (every group), and of them those answered already. */
  leasedMessages: number;
  leasedAnswered: number;
  oldestPendingAgeSeconds: number;
  deadLetters: number;
  leaseExpiries: number;
  activeLeases: number;
  /** Pushed and resolved (summed over groups) per second since the previous snapshot; 0 at the first. */
  pushedPerSecond: number;
  resolvedPerSecond: number;
  groups: GroupStats[];
  at: number;
}

export interface GroupStats {
  group: string;
  resolved: number;
  lag: number;
  /** Partitions where the group may have work (its ready set: unresolved messages). */
  partitionsWithLag: number;
  /** Creation time (ms) of the oldest message it has not resolved, sampled like the queue's; 0: none. */
  oldestPendingAt: number;
  /** Where its subscription starts (ms); 0: all history. */
  subscribedAt: number;
}

/** One partition as the detailed views show it (docs/broker-queen.md "Queen compatibility"). */
export interface PartitionState {
  partition: string;
  partitionId: string;
  /** Retained messages. */
  retained: number;
  /** Creation times (ms) of its oldest and newest retained message; 0 when it has none. */
  oldestAt: number;
  newestAt: number;
  /** Among the queue's newest `LIMITS.partitionDeadLettersRead` dead letters. */
  deadLetters: number;
  groups: PartitionGroupState[];
}

export interface PartitionGroupState {
  group: string;
  /** Retained messages the group has not resolved, counted up to `LIMITS.partitionLagCount`. */
  lag: number;
  /** Creation time (ms) of the first of them; 0: none. */
  oldestPendingAt: number;
  leaseActive: boolean;
  /** Messages of the active lease not answered yet. */
  leased: number;
}

export interface TraceInput {
  partitionId: string;
  transactionId: string;
  traceNames: string[];
  eventType: string;
  data: unknown;
  consumerGroup: string | null;
  workerId: string | null;
}

export interface TraceEntry extends TraceInput {
  id: string;
  createdAt: string;
}

export interface SystemFlags {
  maintenanceMode: boolean;
  popMaintenanceMode: boolean;
}

export type SeekTarget = { toEnd: true } | { timestamp: number };

export interface LeaseSweep {
  expired: { queue: string; count: number }[];
}

/*
 * The port, by role. Each role is one interface with one implementation in redis/ (the file
 * named in its comment); BrokerStorage only gathers them. A reader looking for where something
 * happens goes from the role to its file, and from there to the script it runs (lua/README.md).
 */

/** The data path: what a producer and a consumer do (redis/queue-store.ts). */
export interface QueueStore {
  push(items: PushItem[]): Promise<PushResult[]>;
  pop(request: PopRequest): Promise<PopResult>;
  /** Gives a pop's leases back without counting an attempt (its client went away). */
  release(result: PopResult, group: string): Promise<void>;
  /**
   * The largest message record the queue may hold (bytes): an upper bound, known for records
   * of 1 MiB or more (redis/record-sizes.ts); 0 when none is known.
   */
  largestRecord(queue: string): number;
  ack(acks: AckInput[]): Promise<AckResult[]>;
  /** Pushes and acks, all applied or none. */
  transaction(operations: TransactionOperation[]): Promise<TransactionOutcome>;
  extendLease(leaseId: string, seconds: number): Promise<LeaseExtension>;
}

/** Queues and their options (redis/catalog.ts). */
export interface QueueCatalog {
  configure(
    queue: string,
    options: Partial<QueueOptions>,
    names: { namespace: string; task: string },
  ): Promise<QueueInfo>;
  list(): Promise<QueueInfo[]>;
  get(queue: string): Promise<QueueInfo | undefined>;
  delete(queue: string): Promise<boolean>;
}

/** Reading and deleting stored messages (redis/messages.ts). */
export interface MessageBrowser {
  /** The first `limit` messages, within `budget` (one per request: the view's bytes; a new one if absent). */
  list(filter: {
    queue: string;
    partition?: string;
    limit: number;
    budget?: ReadBudget;
  }): Promise<MessageView[]>;
  /**
   * The newest `offset + limit` messages of each partition, merged newest first, one page of
   * them, each with its state for queue mode (docs/broker-queen.md, "Queen compatibility").
   */
  states(filter: { queue: string; limit: number; offset: number }): Promise<QueueMessageState[]>;
  get(partitionId: string, transactionId: string): Promise<MessageView | undefined>;
  delete(partitionId: string, transactionId: string): Promise<boolean>;
}

/** The dead-letter queue of each queue (redis/dead-letters.ts). */
export interface DeadLetterStore {
  list(filter: {
    queue: string;
    group?: string;
    limit: number;
    offset: number;
    /** One per request: the view's bytes (view-budget.ts); a new one if absent. */
    budget?: ReadBudget;
  }): Promise<{ messages: DeadLetter[]; total: number }>;
  requeue(queue: string, dlqIds: string[]): Promise<number>;
}

/** Consumer groups: their names, positions and per-partition state (redis/groups.ts). */
export interface GroupStore {
  list(queue: string): Promise<string[]>;
  /** The first `LIMITS.maxDetailedPartitions` partitions of a queue with each group's state there. */
  partitions(queue: string): Promise<PartitionState[]>;
  seek(queue: string, group: string, partition: string | undefined, target: SeekTarget): Promise<number>;
  delete(queue: string, group: string): Promise<boolean>;
}

/** Message traces (redis/traces.ts). */
export interface TraceStore {
  add(trace: TraceInput): Promise<TraceEntry>;
  ofMessage(partitionId: string, transactionId: string): Promise<TraceEntry[]>;
  byName(name: string, limit: number): Promise<TraceEntry[]>;
  names(limit: number): Promise<{ name: string; count: number }[]>;
}

/** The maintenance modes, the same on every node (redis/flags.ts). */
export interface FlagStore {
  get(): Promise<SystemFlags>;
  set(flags: Partial<SystemFlags>): Promise<SystemFlags>;
}

/**
 * The periodic jobs' work (redis/housekeeping.ts); maintenance.ts schedules them, one node at
 * a time on Redis.
 */
export interface Housekeeping {
  /** Expires every lease past its time (an expiry is an attempt). */
  sweepLeases(): Promise<LeaseSweep>;
  /** Deletes what retention and eviction allow; keeps going while work is due, up to `budgetMs`. */
  applyRetention(budgetMs?: number): Promise<number>;
  refreshStats(): Promise<QueueStats[]>;
  /** The last stats snapshot (cheap: what /metrics reads). */
  cachedStats(): Promise<QueueStats[]>;
}

/** "Work may be available": what wakes parked pops, on every node (redis/notifications.ts). */
export interface Availability {
  /**
   * Called whenever work may have become available in a queue (any node), with the number of
   * pops per consumer group it can serve at most (`Infinity` when unknown): long-poll.ts wakes
   * no more parked pops than that.
   */
  onAvailable(listener: AvailabilityListener): () => void;
  /**
   * A pop is parked on `queue` on this node: deliver the queue's notifications here until the
   * returned function is called (docs/broker-topologies.md "Redis topologies": on Redis Cluster
   * each queue has its own sharded channel; elsewhere every node hears every queue and this
   * does nothing). Once watching starts, listeners get one (queue, Infinity) call, so a
   * notification published before the subscription took effect is not missed.
   */
  watchQueue(queue: string): () => void;
}

/**
 * One intent of a queue's outbox (docs/broker-outbox.md), recorded by the script whose state
 * change caused it: a bridged message's event, a transaction's hub update, or the shares of a
 * transaction across slots to apply.
 */
export type OutboxIntent =
  | {
      kind: 'bridge';
      /** Its id in the outbox (a stream id: its time is when it was recorded). */
      id: string;
      queue: string;
      event: 'pushed' | 'completed';
      partition: string;
      messageId: string;
      transactionId: string;
      /** The group that completed the message; '' for pushed. */
      group: string;
      topicTemplate: string;
      private: boolean;
      /** The payload as stored (sealed on a queue with encryptionEnabled). */
      data: string;
    }
  | ({ kind: 'publish'; id: string; queue: string } & { update: HubUpdate })
  /** A committed transaction across slots: its other slots' shares to apply (their queues). */
  | { kind: 'apply'; id: string; queue: string; transactionId: string; shares: string[][] };

export type OutboxTake =
  | { held: true; intents: OutboxIntent[] }
  /** Another relay holds this outbox for `retryInMs` more. */
  | { held: false; retryInMs: number };

export interface OutboxStatus {
  queue: string;
  /** Intents waiting to be relayed. */
  pending: number;
  /** When (ms) the oldest waiting intent was recorded; null when none waits. */
  oldestAt: number | null;
  /** Intents the destination refused for good, kept aside (obd). */
  refused: number;
}

/**
 * The outbox (redis/outbox.ts): intents recorded by the data path's scripts, relayed by
 * outbox.ts on any node. `due` lists the queues whose outbox may hold intents.
 */
export interface OutboxStore {
  /** Queues whose outbox relays should look at by `now`, earliest first, with their mark. */
  due(now: number, limit: number): Promise<{ queue: string; mark: number }[]>;
  /** Lists a queue's outbox for the relays from `at` (ms) on, unless listed earlier. */
  mark(queue: string, at: number): Promise<void>;
  /** Takes it off that list once found empty, unless marked again since `mark`. */
  forget(queue: string, mark: number): Promise<void>;
  /** The head of a queue's outbox for `relay`, which then holds it for `lockMs`. */
  take(queue: string, relay: string, lockMs: number, count: number): Promise<OutboxTake>;
  /** Removes relayed intents and keeps refused ones aside; resolves to the intents left. */
  done(
    queue: string,
    relay: string,
    relayed: readonly string[],
    refused: readonly { id: string; reason: string }[],
  ): Promise<number>;
  /** Queues with a bridge: the relays look at each now and then (a node may die before marking). */
  bridged(): Promise<string[]>;
  /** Pending intents of these queues. */
  status(queues: readonly string[]): Promise<OutboxStatus[]>;
  /** Called with each queue whose outbox this node's requests recorded intents in. */
  onRecorded(listener: (queue: string) => void): void;
  /** Applies the prepared shares of a committed transaction across slots (once, whoever asks). */
  applyTransaction(transactionId: string, shares: readonly string[][]): Promise<void>;
  /** Decides transactions across slots left undecided past their deadline; how many it saw. */
  recoverTransactions(now: number): Promise<number>;
}

/** Every role of one backend (storage-redis.ts builds them on Redis or the embedded engine). */
export interface BrokerStorage {
  readonly kind: 'memory' | 'redis';
  readonly queues: QueueStore;
  readonly catalog: QueueCatalog;
  readonly messages: MessageBrowser;
  readonly deadLetters: DeadLetterStore;
  readonly groups: GroupStore;
  readonly traces: TraceStore;
  readonly flags: FlagStore;
  readonly housekeeping: Housekeeping;
  readonly availability: Availability;
  /** Queen's streams API: queries, cycles, state (streams/types.ts). */
  readonly streams: StreamsStorage;
  /** Per-tenant limits (`@herald/limits`: counters and overrides on the same Redis). */
  readonly limits: TenantLimits;
  readonly outbox: OutboxStore;
  /** Resolves when the backend reaches its store; for /readyz. */
  ready(): Promise<string | undefined>;
  close(): Promise<void>;
}

export type AvailabilityListener = (queue: string, capacity: number) => void;

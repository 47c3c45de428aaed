/** The broker's answers the console reads (docs/broker-queen.md, "Queen's view shapes"). */

export interface Overview {
  queues: number;
  partitions: number;
  messages: {
    total: number;
    pending: number;
    processing: number;
    completed: number;
    deadLetter: number;
  };
  lag: { time: { max: number; avg: number }; offset: { max: number } };
  throughput: { ingestedPerSecond: number; processedPerSecond: number };
  statsAge: number;
}

export interface QueueSummary {
  name: string;
  namespace: string;
  task: string;
  createdAt: string;
  partitions: number;
  messages: { total: number; pending: number; processing: number };
}

export interface Counts {
  total: number;
  pending: number;
  processing: number;
  completed: number;
  deadLetter: number;
}

export interface QueueDetail {
  queue: {
    name: string;
    namespace: string;
    task: string;
    priority: number;
    createdAt: string;
    config: {
      leaseTime: number;
      retryLimit: number;
      retryDelay: number;
      ttl: number;
      maxQueueSize: number;
      deadLetterQueue: boolean;
    } & Partial<QueueBridge>;
  };
  partitions: {
    id: string;
    name: string;
    messages: Counts;
    oldestMessage: string | null;
    newestMessage: string | null;
  }[];
  totals: Counts;
}

/** Which events of a bridged queue's messages become hub updates. */
export type BridgeEvents = 'push' | 'completed' | 'both';

/**
 * A queue's bridge to the hub (docs/broker-outbox.md), as configure sets and answers it. The
 * queue detail reports these only when the broker's view includes them.
 */
export interface QueueBridge {
  /** Hub topic template ({queue} {partition} {namespace} {task} {group}); '': not bridged. */
  bridgeTopic: string;
  bridgeOn: BridgeEvents;
  bridgePrivate: boolean;
}

export interface ConsumerGroup {
  name: string;
  queueName: string;
  members: number;
  partitionsWithLag: number;
  totalLag: number;
  maxTimeLag: number;
  state: string;
  subscriptionTimestamp: string | null;
}

export interface LaggingPartition {
  consumer_group: string;
  queue_name: string;
  partition_name: string;
  offset_lag: number;
  time_lag_seconds: number;
  oldest_unconsumed_at: string | null;
}

export interface QueueMessage {
  id: string;
  transactionId: string;
  partitionId: string;
  partition: string;
  status: string;
  createdAt: string;
}

export interface DeadLetter {
  dlqId: string;
  id: string;
  transactionId: string;
  traceId: string | null;
  queue: string;
  partition: string;
  partitionId: string;
  data: unknown;
  createdAt: string;
  consumerGroup: string;
  errorMessage: string | null;
  retryCount: number;
  failedAt: string;
}

export interface Trace {
  id: string;
  transactionId: string;
  partitionId: string;
  eventType: string;
  data: unknown;
  traceNames?: string[];
  consumerGroup?: string | null;
  workerId?: string | null;
  createdAt: string;
}

export interface Flags {
  maintenanceMode: boolean;
  popMaintenanceMode: boolean;
}

export interface NodeInfo {
  name: string;
  address?: string;
  connectedSeconds?: number;
  self: boolean;
}

/** One tenant's use of one limit (GET /api/v1/system/limits). */
export interface TenantUsage {
  tenant: string;
  used: number;
  /** Negative: no limit. */
  limit: number;
}

export interface TenantLimits {
  /** Whose budget a request spends: the token's `sub`, or the queue's namespace. */
  tenant: 'sub' | 'namespace';
  defaults: { push: number | null; inflight: number | null };
  overrides: { kind: string; tenant: string; limit: number }[];
  usage: { push: TenantUsage[]; inflight: TenantUsage[] };
}

/** The hub's limits (GET /herald/admin/limits on a hub node, with a hub admin token). */
export interface HubTenantLimits {
  defaults: { subscriptions: number | null; publish: number | null };
  overrides: { kind: string; tenant: string; limit: number }[];
  usage: { subscriptions: TenantUsage[]; publish: TenantUsage[] };
}

/** One queue's outbox (GET /api/v1/outbox; docs/broker-outbox.md). */
export interface OutboxRow {
  queue: string;
  /** Intents waiting to be relayed to the hub. */
  pending: number;
  /** When the oldest waiting intent was recorded; null when none waits. */
  oldestAt: string | null;
  /** Intents the hub refused for good, kept aside. */
  refused: number;
  /** Age of the oldest waiting intent (0: none waits). */
  lagSeconds: number;
}

export interface OutboxStatus {
  /** This node runs a relay (BROKER_HUB_URL is set). */
  relaying: boolean;
  outboxes: OutboxRow[];
}

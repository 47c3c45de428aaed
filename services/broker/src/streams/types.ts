import type { PushItem, PushResult } from '../push-item.js';

/*
 * The streams storage port (Queen's streams API, docs/broker-streams.md "Streams"), implemented by
 * streams/redis.ts on Redis and on the embedded engine alike (test/streams.test.ts).
 */

export interface QueryRegistration {
  name: string;
  sourceQueue: string;
  sinkQueue: string | null;
  configHash: string;
  reset: boolean;
  /** A fresh UUID per request: the query's id if this request creates it; spots a resend. */
  requestId: string;
}

export type RegisterOutcome =
  | { success: true; queryId: string; fresh: boolean; reset: boolean }
  | { success: false; conflict: 'hash' | 'full' | 'slot'; queryId: string | null; error: string };

export type StateOp = { type: 'upsert'; key: string; value: string } | { type: 'delete'; key: string };

export type CycleAckStatus = 'completed' | 'success' | 'failed' | 'dlq';

export interface CycleAck {
  transactionId: string;
  leaseId: string | null;
  status: CycleAckStatus;
  /** Messages the cycle covers (Queen's ack.count: reported back, for metrics). */
  count: number;
  error: string | null;
}

export interface CycleInput {
  /** SHA-256 of the request's canonical body: a resent cycle has the same id. */
  cycleId: string;
  queryId: string;
  /** The state shard: the source partition's id as the client sent it. */
  partitionId: string;
  group: string;
  releaseLease: boolean;
  stateOps: StateOp[];
  pushItems: PushItem[];
  ack: CycleAck | null;
}

/** What a cycle's ack did (routes/wire.ts gives it Queen's names). */
export interface CycleAckResult {
  count: number;
  leaseReleased: boolean;
  dlq: boolean;
}

export type CycleOutcome =
  | {
      success: true;
      stateOpsApplied: number;
      pushResults: PushResult[];
      ackResult: CycleAckResult | null;
      /** The source queue, when the cycle acked (for the ack counter). */
      sourceQueue: string | null;
    }
  | { success: false; error: string };

export interface StateRow {
  key: string;
  /** JSON text, as the cycle stored it. */
  value: string;
  updatedAt: number;
}

/** State rows and bytes (keys and values) held per registered query, for /metrics. */
export interface QueryStateStats {
  query: string;
  rows: number;
  bytes: number;
}

export interface StreamsStorage {
  register(registration: QueryRegistration): Promise<RegisterOutcome>;
  /** undefined: no query has this id. */
  cycle(input: CycleInput): Promise<CycleOutcome | undefined>;
  /** Rows of one shard, all of them when `keys` is empty; undefined: no query has this id. */
  state(queryId: string, partitionId: string, keys: string[]): Promise<StateRow[] | undefined>;
  stats(): Promise<QueryStateStats[]>;
}

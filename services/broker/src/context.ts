import type { Clock } from '@herald/redis';
import type { FastifyBaseLogger } from 'fastify';
import type { BodyBudget } from './body-budget.js';
import type { PayloadEncryption } from './encryption.js';
import type { LongPoll } from './long-poll.js';
import type { BrokerMetrics } from './metrics.js';
import type { BrokerStorage } from './storage.js';
import type { BrokerLimits } from './tenant-limits.js';

/** What the domain modules (push, pop, ack, lease, transaction) work with. */
export interface BrokerContext {
  readonly storage: BrokerStorage;
  /** The storage's clock: routes compare the times it stored (lag, ages, snapshots) with it. */
  readonly clock: Clock;
  readonly metrics: BrokerMetrics;
  readonly longPoll: LongPoll;
  readonly log: FastifyBaseLogger;
  /** Seals pushes to encrypted queues, opens payloads on their way out (encryption.ts). */
  readonly encryption: PayloadEncryption;
  readonly defaultBatchSize: number;
  readonly defaultTimeout: number;
  /** Per-tenant push rate and in-flight budgets (tenant-limits.ts). */
  readonly limits: BrokerLimits;
  /** BROKER_HUB_URL is set: this node relays outboxes to a hub (bridges, transaction publishes). */
  readonly hubConfigured: boolean;
  /** BROKER_MAX_PAYLOAD_BYTES: the largest serialized payload one push item may carry. */
  readonly maxPayloadBytes: number;
  /** The node's budget of large bodies in flight, pops' answers of large messages included (off: undefined). */
  readonly bodyBudget: BodyBudget | undefined;
}

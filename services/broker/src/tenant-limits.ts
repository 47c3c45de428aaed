// The broker's limits per tenant (docs/broker-api.md, "Limits per tenant"): who the tenant of a
// request is, and the push rate and in-flight budgets around push, pop, ack and lease extension.
// The counting is @herald/limits' (Lua on Redis, one text for every node).
import type { Refusal, TenantLimits } from '@herald/limits';
import type { Counter } from '@herald/metrics';
import { type BrokerError, limitExceeded, limitTooLarge } from './errors.js';
import { namespaceAndTask } from './identifiers.js';
import type { AckInput, AckResult, LeaseExtension, PopRequest, PopResult, PushItem } from './storage.js';

/** Whose budget a request spends: the token's `sub`, or the queue's namespace. */
export type TenantSource = 'sub' | 'namespace';

/** The tenant of requests without a `sub` (auth off, or a token without one) in `sub` mode. */
export const ANONYMOUS_TENANT = '~anonymous';

/**
 * The longest Retry-After an in-flight refusal gives: slots come back with acks at any moment,
 * not only when the earliest lease expires.
 */
const INFLIGHT_RETRY_MS = 1000;

const UNITS: Record<string, string> = {
  push: 'messages per second',
  inflight: 'messages leased and not acknowledged',
};

/** The answer to a request over a limit: 429 with Retry-After, or 400 when it can never fit. */
export function limitError(refusal: Refusal): BrokerError {
  const limit = `${refusal.kind} limit of ${refusal.limit} ${UNITS[refusal.kind] ?? ''}`.trimEnd();
  if (refusal.tooLarge)
    return limitTooLarge(`Tenant '${refusal.tenant}': the request alone exceeds its ${limit}; split it`);
  return limitExceeded(`Tenant '${refusal.tenant}' is over its ${limit}; retry later`, refusal.retryAfterMs);
}

/** A pop's in-flight reservation: its tenant and how many messages it may lease. */
export interface Reservation {
  readonly tenant: string;
  readonly granted: number;
}

export class BrokerLimits {
  constructor(
    readonly limits: TenantLimits,
    readonly source: TenantSource,
    private readonly refusals: Counter<'kind'>,
  ) {}

  tenantOf(sub: string | null | undefined, queue: string): string {
    if (this.source === 'namespace') return namespaceAndTask(queue).namespace;
    return sub || ANONYMOUS_TENANT;
  }

  /**
   * Takes a push's messages from their tenants' push rates, all or none: refused, nothing of the
   * request is stored (throws the 429 or 400).
   */
  async takePush(items: readonly PushItem[]): Promise<void> {
    if (items.length === 0 || !this.limits.anyApplies('push')) return;
    const costs = new Map<string, number>();
    for (const item of items) {
      const tenant = this.tenantOf(item.producerSub, item.queue);
      costs.set(tenant, (costs.get(tenant) ?? 0) + 1);
    }
    const refusal = await this.limits.takeRate('push', costs);
    if (refusal) throw this.refuse(refusal);
  }

  /**
   * Reserves in-flight slots for a pop: undefined when no limit applies (the pop runs as asked);
   * otherwise the batch it may lease (a smaller batch when fewer slots are free), or the 429.
   */
  async reserve(sub: string | undefined, request: PopRequest): Promise<Reservation | undefined> {
    const tenant = this.tenantOf(sub, request.queue);
    const answer = await this.limits.reserveInFlight(tenant, request.leaseId, request.batch);
    if (answer === undefined) return undefined;
    if ('granted' in answer) return { tenant, granted: answer.granted };
    const retryAfterMs = Math.min(answer.retryAfterMs ?? INFLIGHT_RETRY_MS, INFLIGHT_RETRY_MS);
    throw this.refuse({ ...answer, retryAfterMs });
  }

  /**
   * What the reserved pop (`leased`: its request with the lease id) leased; `held` false when it
   * gave the messages back or acknowledged them at once: the reservation is given back whole.
   */
  async settle(
    reservation: Reservation,
    leased: PopRequest,
    result: PopResult,
    held: boolean,
  ): Promise<void> {
    let count = 0;
    let expiresAt = 0;
    for (const popped of result.partitions) {
      count += popped.messages.length;
      expiresAt = Math.max(expiresAt, popped.leaseExpiresAt);
    }
    const partitions = result.partitions.map((popped) => ({
      partitionId: popped.partitionId,
      group: leased.group,
    }));
    await this.limits.settleInFlight(
      reservation.tenant,
      leased.leaseId,
      held ? count : 0,
      expiresAt,
      held ? partitions : [],
    );
  }

  /** Frees the slots of the acknowledgements that were applied (`success`). */
  async acknowledged(
    acks: readonly AckInput[],
    results: readonly Pick<AckResult, 'success'>[],
  ): Promise<void> {
    if (!this.limits.anyApplies('inflight')) return;
    const applied = acks.filter((_, index) => results[index]?.success === true);
    await this.limits.ackInFlight(
      applied.map(({ partitionId, group, transactionId }) => ({ partitionId, group, transactionId })),
    );
  }

  /** Moves a lease's slots with its extension. */
  async extended(extension: LeaseExtension): Promise<void> {
    if (extension.success && extension.expiresAt !== null)
      await this.limits.extendInFlight(extension.leaseId, extension.expiresAt);
  }

  private refuse(refusal: Refusal): BrokerError {
    this.refusals.inc({ kind: refusal.kind });
    return limitError(refusal);
  }
}

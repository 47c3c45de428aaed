import { AUTH_FAILURE_REASONS } from '@herald/auth';
import { limitRefusalsCounter } from '@herald/limits';
import { Counter, Gauge, Histogram, type Metrics, withZeroSeries } from '@herald/metrics';
import { lagOfGroup } from './lag.js';
import type { AckStatus, BrokerStorage, QueueStats } from './storage.js';

/** The label value shared by every queue past the cap (docs/broker-operations.md "Metrics"). */
export const OTHER_QUEUES = '__other__';

/** `inc` as prom-client's, with the `queue` label passed through the cap. */
export interface QueueCounter<L extends string> {
  inc(labels: Record<L, string>, value?: number): void;
}

/** The broker's series (names fixed by docs/contracts.md). */
export interface BrokerMetrics {
  readonly base: Metrics;
  readonly pushed: QueueCounter<'queue'>;
  readonly popped: QueueCounter<'queue'>;
  readonly acked: QueueCounter<'queue' | 'status'>;
  readonly transactions: Counter<'result'>;
  /**
   * Transactions across Redis Cluster slots: seconds from the commit to the last other slot's
   * share applied (what a reader of those slots may miss meanwhile; docs/broker-outbox.md).
   */
  readonly transactionApplyWindow: Histogram;
  readonly leaseExpiries: QueueCounter<'queue'>;
  readonly parkedLongPolls: Gauge;
  /** The budget of large request bodies in flight (body-budget.ts): bytes held, bodies waiting, refusals. */
  readonly bodyBytesInFlight: Gauge;
  readonly bodiesWaiting: Gauge;
  readonly bodyBudgetRefusals: Counter;
  readonly authFailures: Counter<'reason'>;
  /** Requests refused over a tenant's limit (`push`, `inflight`); `service="broker"` by default label. */
  readonly limitRefusals: Counter<'kind'>;
  /** Drops a deleted queue's series and frees its label for another queue. */
  forgetQueue(queue: string): void;
}

const ACK_STATUSES: readonly AckStatus[] = ['completed', 'success', 'failed', 'retry', 'dlq'];

/**
 * Queue names come from clients: one push to 5,000 new queues would otherwise add 20,000
 * series. The first `max` queues seen get their own label value; the rest share
 * `__other__` until a labelled queue is deleted and frees its slot.
 */
export class QueueLabels {
  private readonly labelled = new Set<string>();
  constructor(private readonly max: number) {}

  of(queue: string): string {
    if (this.labelled.has(queue)) return queue;
    if (this.labelled.size >= this.max || queue === OTHER_QUEUES) return OTHER_QUEUES;
    this.labelled.add(queue);
    return queue;
  }

  forget(queue: string): boolean {
    return this.labelled.delete(queue);
  }
}

/**
 * The `group` label of the per-group series, under the same cap: a (queue, group) pair gets its
 * own label while fewer than `max` pairs have one and its queue has its own `queue` label; the
 * rest share `group="__other__"` under their queue's label.
 */
export class GroupLabels {
  private readonly labelled = new Map<string, Set<string>>();
  private count = 0;
  constructor(private readonly max: number) {}

  of(queueLabel: string, group: string): string {
    if (queueLabel === OTHER_QUEUES || group === OTHER_QUEUES) return OTHER_QUEUES;
    const groups = this.labelled.get(queueLabel);
    if (groups?.has(group)) return group;
    if (this.count >= this.max) return OTHER_QUEUES;
    if (groups) groups.add(group);
    else this.labelled.set(queueLabel, new Set([group]));
    this.count++;
    return group;
  }

  forget(queue: string): void {
    this.count -= this.labelled.get(queue)?.size ?? 0;
    this.labelled.delete(queue);
  }
}

function capped<L extends string>(counter: Counter<L>, labels: QueueLabels): QueueCounter<L> {
  return {
    inc: (values, value = 1) => {
      const queue = labels.of((values as Record<string, string>).queue ?? '');
      counter.inc({ ...values, queue } as Record<L, string>, value);
    },
  };
}

/**
 * Counters are per node (Prometheus sums them); the gauges per queue come from the stats
 * snapshot the maintenance job writes, read at scrape time, so every node reports the same
 * (queues past the cap summed, or the maximum age, under `__other__`).
 */
export function createBrokerMetrics(
  base: Metrics,
  storage: () => BrokerStorage | undefined,
  maxQueues: number,
): BrokerMetrics {
  const registers = [base.registry];
  const labels = new QueueLabels(maxQueues);
  /**
   * The stats snapshot the per-queue and per-group gauges read: one read of the stats hash per
   * scrape, shared by every gauge collected in it (kept until the scrape's turn ends).
   */
  let reading: Promise<QueueStats[]> | undefined;
  const statsSnapshot = (): Promise<QueueStats[]> => {
    reading ??= (storage()?.housekeeping.cachedStats() ?? Promise.resolve([]))
      .catch(() => [])
      .finally(() => setImmediate(() => (reading = undefined)));
    return reading;
  };
  const queueGauge = (
    name: string,
    help: string,
    pick: (stats: QueueStats) => number,
    combine: (a: number, b: number) => number = (a, b) => a + b,
  ) =>
    new Gauge({
      name,
      help,
      labelNames: ['queue'],
      registers,
      async collect() {
        this.reset();
        const snapshot = await statsSnapshot();
        const values = new Map<string, number>();
        for (const stats of snapshot) {
          const label = labels.of(stats.queue);
          const known = values.get(label);
          values.set(label, known === undefined ? pick(stats) : combine(known, pick(stats)));
        }
        for (const [queue, value] of values) this.set({ queue }, value);
      },
    });
  queueGauge(
    'herald_broker_pending_messages',
    'Messages pushed and not yet resolved by the slowest consumer group, per queue.',
    (stats) => stats.pending,
  );
  queueGauge(
    'herald_broker_oldest_pending_age_seconds',
    'Age of the oldest message not yet resolved, per queue (sampled over ready partitions).',
    (stats) => stats.oldestPendingAgeSeconds,
    Math.max,
  );
  queueGauge('herald_broker_dlq_messages', 'Dead letters held per queue.', (stats) => stats.deadLetters);
  const groupLabels = new GroupLabels(maxQueues);
  const groupGauge = (name: string, help: string, pick: 'messages' | 'oldestSeconds') =>
    new Gauge({
      name,
      help,
      labelNames: ['queue', 'group'],
      registers,
      async collect() {
        this.reset();
        const snapshot = await statsSnapshot();
        const values = new Map<string, { queue: string; group: string; value: number }>();
        for (const stats of snapshot) {
          const queue = labels.of(stats.queue);
          for (const entry of stats.groups) {
            const group = groupLabels.of(queue, entry.group);
            const value = lagOfGroup(stats, entry)[pick];
            const key = `${queue}\0${group}`;
            const known = values.get(key);
            // Past the cap messages add up; the age is the oldest.
            if (!known) values.set(key, { queue, group, value });
            else known.value = pick === 'messages' ? known.value + value : Math.max(known.value, value);
          }
        }
        for (const { queue, group, value } of values.values()) this.set({ queue, group }, value);
      },
    });
  groupGauge(
    'herald_consumer_group_lag_messages',
    'Messages a consumer group has not resolved, per queue and group (cluster-wide, from the stats snapshot).',
    'messages',
  );
  groupGauge(
    'herald_consumer_group_lag_seconds',
    'Age of the oldest message a consumer group has not resolved, per queue and group (cluster-wide).',
    'oldestSeconds',
  );
  const pushed = new Counter({
    name: 'herald_broker_push_total',
    help: 'Messages stored by push (duplicates excluded), per queue.',
    labelNames: ['queue'],
    registers,
  });
  const popped = new Counter({
    name: 'herald_broker_pop_total',
    help: 'Messages delivered by pop, per queue.',
    labelNames: ['queue'],
    registers,
  });
  const acked = new Counter({
    name: 'herald_broker_ack_total',
    help: 'Acknowledgements applied, per queue and status.',
    labelNames: ['queue', 'status'],
    registers,
  });
  const leaseExpiries = new Counter({
    name: 'herald_broker_lease_expiries_total',
    help: 'Leases expired by the sweep (on the node that ran it), per queue.',
    labelNames: ['queue'],
    registers,
  });
  return {
    base,
    pushed: capped(pushed, labels),
    popped: capped(popped, labels),
    acked: capped(acked, labels),
    leaseExpiries: capped(leaseExpiries, labels),
    // Labelled counters start with their known label values at 0: no "No data" panel before the
    // first event (issue #13). Per-queue series cannot: queues are not known in advance.
    transactions: withZeroSeries(
      new Counter({
        name: 'herald_broker_transactions_total',
        help: 'Transactions by result (committed, rejected).',
        labelNames: ['result'],
        registers,
      }),
      'result',
      ['committed', 'rejected'],
    ),
    transactionApplyWindow: new Histogram({
      name: 'herald_broker_transaction_apply_window_seconds',
      help: 'Transactions across Redis Cluster slots: time from the commit to the last other slot applied.',
      buckets: [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1],
      registers,
    }),
    parkedLongPolls: new Gauge({
      name: 'herald_broker_parked_long_polls',
      help: 'Pops waiting (wait=true) on this node.',
      registers,
    }),
    bodyBytesInFlight: new Gauge({
      name: 'herald_broker_body_bytes_in_flight',
      help: 'Bytes of request bodies over 1 MiB and of pop answers of records over 1 MiB this node is handling (BROKER_BODY_BUDGET_BYTES bounds it).',
      registers,
    }),
    bodiesWaiting: new Gauge({
      name: 'herald_broker_bodies_waiting',
      help: 'Request bodies over 1 MiB (unread) and pops of records over 1 MiB waiting for room in the body budget.',
      registers,
    }),
    bodyBudgetRefusals: new Counter({
      name: 'herald_broker_body_budget_refusals_total',
      help: 'Requests answered 503 after waiting BROKER_BODY_BUDGET_WAIT for room in the body budget.',
      registers,
    }),
    authFailures: withZeroSeries(
      new Counter({
        name: 'herald_broker_auth_failures_total',
        help: 'Rejected requests by reason.',
        labelNames: ['reason'],
        registers,
      }),
      'reason',
      AUTH_FAILURE_REASONS,
    ),
    limitRefusals: limitRefusalsCounter(base, ['push', 'inflight']),
    forgetQueue(queue) {
      // `__other__` is never forgotten: it may count other live queues too.
      if (!labels.forget(queue)) return;
      groupLabels.forget(queue);
      for (const counter of [pushed, popped, leaseExpiries]) counter.remove({ queue });
      for (const status of ACK_STATUSES) acked.remove({ queue, status });
    },
  };
}

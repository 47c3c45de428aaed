import { Counter, Gauge, type Metrics } from '@herald/metrics';
import type { BrokerStorage, QueueStats } from './storage.js';

/** The broker's series (names fixed by docs/contracts.md). */
export interface BrokerMetrics {
  readonly base: Metrics;
  readonly pushed: Counter<'queue'>;
  readonly popped: Counter<'queue'>;
  readonly acked: Counter<'queue' | 'status'>;
  readonly transactions: Counter<'result'>;
  readonly leaseExpiries: Counter<'queue'>;
  readonly parkedLongPolls: Gauge;
  readonly authFailures: Counter<'reason'>;
}

/**
 * Counters are per node (Prometheus sums them); the gauges per queue come from the stats
 * snapshot the maintenance job writes, read at scrape time, so every node reports the same.
 */
export function createBrokerMetrics(base: Metrics, storage: () => BrokerStorage | undefined): BrokerMetrics {
  const registers = [base.registry];
  const queueGauge = (name: string, help: string, pick: (stats: QueueStats) => number) =>
    new Gauge({
      name,
      help,
      labelNames: ['queue'],
      registers,
      async collect() {
        this.reset();
        const snapshot =
          (await storage()
            ?.cachedStats()
            .catch(() => [])) ?? [];
        for (const stats of snapshot) this.set({ queue: stats.queue }, pick(stats));
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
  );
  queueGauge('herald_broker_dlq_messages', 'Dead letters held per queue.', (stats) => stats.deadLetters);
  return {
    base,
    pushed: new Counter({
      name: 'herald_broker_push_total',
      help: 'Messages stored by push (duplicates excluded), per queue.',
      labelNames: ['queue'],
      registers,
    }),
    popped: new Counter({
      name: 'herald_broker_pop_total',
      help: 'Messages delivered by pop, per queue.',
      labelNames: ['queue'],
      registers,
    }),
    acked: new Counter({
      name: 'herald_broker_ack_total',
      help: 'Acknowledgements applied, per queue and status.',
      labelNames: ['queue', 'status'],
      registers,
    }),
    transactions: new Counter({
      name: 'herald_broker_transactions_total',
      help: 'Transactions by result (committed, rejected).',
      labelNames: ['result'],
      registers,
    }),
    leaseExpiries: new Counter({
      name: 'herald_broker_lease_expiries_total',
      help: 'Leases expired by the sweep (on the node that ran it), per queue.',
      labelNames: ['queue'],
      registers,
    }),
    parkedLongPolls: new Gauge({
      name: 'herald_broker_parked_long_polls',
      help: 'Pops waiting (wait=true) on this node.',
      registers,
    }),
    authFailures: new Counter({
      name: 'herald_broker_auth_failures_total',
      help: 'Rejected requests by reason.',
      labelNames: ['reason'],
      registers,
    }),
  };
}

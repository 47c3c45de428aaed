import { Counter, Gauge, type Metrics } from '@herald/metrics';
import { OTHER_QUEUES } from '../metrics.js';
import type { BrokerStorage } from '../storage.js';
import type { QueryStateStats } from './types.js';

export interface StreamsMetrics {
  readonly cycles: Counter<'result'>;
}

/**
 * Streams series (docs/broker-operations.md, "Metrics"). State gauges are read from storage at scrape
 * time, so every node reports the same. Query names come from clients: as for queues
 * (BROKER_METRICS_MAX_QUEUES), the first `max` queries by name get their own label value and
 * the rest are summed under `__other__`.
 */
export function createStreamsMetrics(
  base: Metrics,
  storage: () => BrokerStorage | undefined,
  max: number,
): StreamsMetrics {
  const registers = [base.registry];
  const stateGauge = (name: string, help: string, pick: (stats: QueryStateStats) => number) =>
    new Gauge({
      name,
      help,
      labelNames: ['query'],
      registers,
      async collect() {
        this.reset();
        const stats =
          (await storage()
            ?.streams.stats()
            .catch(() => [])) ?? [];
        stats.sort((a, b) => (a.query < b.query ? -1 : a.query > b.query ? 1 : 0));
        const values = new Map<string, number>();
        stats.forEach((entry, index) => {
          const label = index < max && entry.query !== OTHER_QUEUES ? entry.query : OTHER_QUEUES;
          values.set(label, (values.get(label) ?? 0) + pick(entry));
        });
        for (const [query, value] of values) this.set({ query }, value);
      },
    });
  stateGauge('herald_broker_streams_state_rows', 'Streams state rows held, per query.', (s) => s.rows);
  stateGauge(
    'herald_broker_streams_state_bytes',
    'Streams state held (keys and serialized values, bytes), per query.',
    (s) => s.bytes,
  );
  return {
    cycles: new Counter({
      name: 'herald_broker_streams_cycles_total',
      help: 'Streams cycles by result (committed, rejected).',
      labelNames: ['result'],
      registers,
    }),
  };
}

import { AUTH_FAILURE_REASONS } from '@herald/auth';
import { limitRefusalsCounter } from '@herald/limits';
import { Counter, Gauge, Histogram, type Metrics, withZeroSeries } from '@herald/metrics';
import type { CloseReason } from './subscriber.js';

/** The `reason` values of mercure_slow_subscriber_disconnects_total (hub.ts, onSubscriberClosed). */
export const SLOW_SUBSCRIBER_REASONS: readonly Extract<CloseReason, 'queue_full' | 'dispatch_timeout'>[] = [
  'queue_full',
  'dispatch_timeout',
];
/** The `reason` values of mercure_auth_failures_total: @herald/auth's, and the hub's CSRF rule (errors.ts). */
export const HUB_AUTH_FAILURE_REASONS: readonly string[] = [...AUTH_FAILURE_REASONS, 'csrf'];

/** The hub's series (docs/contracts.md, metric names), registered on the process registry. */
export interface HubMetrics {
  readonly subscribersConnected: Gauge;
  readonly subscribersTotal: Counter;
  readonly updatesTotal: Counter;
  readonly updatesRepeatedTotal: Counter;
  readonly publishDuration: Histogram;
  readonly fanoutDuration: Histogram;
  readonly deliveriesTotal: Counter;
  readonly slowSubscriberDisconnects: Counter<'reason'>;
  readonly authFailures: Counter<'reason'>;
  /** Requests refused over a tenant's limit (`subscriptions`, `publish`); `service="hub"` by default label. */
  readonly limitRefusals: Counter<'kind'>;
  readonly pubsubReconnects: Counter;
  readonly fanoutMessagesReceived: Counter;
  readonly pubsubProbeOk: Gauge;
  readonly historyLength: Gauge;
}

/** What the hub's collected series read from its transport at each scrape. */
export interface HubMetricSources {
  readonly historyLength: () => Promise<number>;
  /** A running total (Transport.fanoutMessagesReceived). */
  readonly fanoutMessagesReceived: () => number;
}

export function createHubMetrics(metrics: Metrics, sources: HubMetricSources): HubMetrics {
  const registers = [metrics.registry];
  // The fan-out path counts with a plain integer (no per-message metric call); a scrape adds
  // what arrived since the previous one.
  let fanoutMessagesCounted = 0;
  return {
    subscribersConnected: new Gauge({
      name: 'mercure_subscribers_connected',
      help: 'Subscribers currently connected to this node.',
      registers,
    }),
    subscribersTotal: new Counter({
      name: 'mercure_subscribers_total',
      help: 'Subscribers that connected to this node since it started.',
      registers,
    }),
    updatesTotal: new Counter({
      name: 'mercure_updates_total',
      help: 'Updates appended to history through this node (repeats not included).',
      registers,
    }),
    updatesRepeatedTotal: new Counter({
      name: 'mercure_updates_repeated_total',
      help: 'Publishes answered from history because their id was already there (retries, resends).',
      registers,
    }),
    publishDuration: new Histogram({
      name: 'mercure_publish_duration_seconds',
      help: 'Time to append an update to history and hand it to the fan-out channel.',
      buckets: [0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.5, 1],
      registers,
    }),
    fanoutDuration: new Histogram({
      name: 'mercure_fanout_duration_seconds',
      help: "Time to match one update against this node's subscribers and queue it on their streams.",
      buckets: [0.00001, 0.00005, 0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.05, 0.1],
      registers,
    }),
    deliveriesTotal: new Counter({
      name: 'mercure_deliveries_total',
      help: 'Events written to subscriber streams of this node (live and replayed).',
      registers,
    }),
    // Labelled counters start with their known label values at 0: no "No data" panel before the
    // first event (issue #13).
    slowSubscriberDisconnects: withZeroSeries(
      new Counter({
        name: 'mercure_slow_subscriber_disconnects_total',
        help: 'Subscribers closed because their queue overflowed or a write stayed blocked too long.',
        labelNames: ['reason'],
        registers,
      }),
      'reason',
      SLOW_SUBSCRIBER_REASONS,
    ),
    authFailures: withZeroSeries(
      new Counter({
        name: 'mercure_auth_failures_total',
        help: 'Requests refused by authentication or authorization, by reason.',
        labelNames: ['reason'],
        registers,
      }),
      'reason',
      HUB_AUTH_FAILURE_REASONS,
    ),
    limitRefusals: limitRefusalsCounter(metrics, ['subscriptions', 'publish']),
    pubsubReconnects: new Counter({
      name: 'mercure_pubsub_reconnects_total',
      help: "Reconnections of this node's fan-out subscription.",
      registers,
    }),
    fanoutMessagesReceived: new Counter({
      name: 'mercure_fanout_messages_received_total',
      help: "Update messages this node received from Redis on the partitions' channels it listens to (probes not counted).",
      registers,
      collect() {
        const total = sources.fanoutMessagesReceived();
        if (total > fanoutMessagesCounted) this.inc(total - fanoutMessagesCounted);
        fanoutMessagesCounted = total;
      },
    }),
    pubsubProbeOk: new Gauge({
      name: 'mercure_pubsub_probe_ok',
      help: '1 when the last end-to-end pub/sub probe came back in time, else 0.',
      registers,
    }),
    historyLength: new Gauge({
      name: 'mercure_history_length',
      help: 'Entries currently retained in the update history.',
      registers,
      async collect() {
        try {
          this.set(await sources.historyLength());
        } catch {
          // Left at its last value while the backend is unreachable; readiness reports the outage.
        }
      },
    }),
  };
}

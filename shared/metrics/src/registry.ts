import { collectDefaultMetrics, Gauge, Histogram, Registry } from 'prom-client';

export interface MetricsOptions {
  /** Labels on every series of this process, e.g. `{ service: 'hub' }`. */
  readonly defaultLabels?: Record<string, string>;
  /** Event-loop lag sampling precision in ms (prom-client's default: 10). */
  readonly eventLoopMonitoringPrecision?: number;
}

/** The metrics one process exports: a registry plus the series every service shares. */
export interface Metrics {
  readonly registry: Registry;
  readonly httpRequestDuration: Histogram<'method' | 'route' | 'status_code'>;
  readonly redisCommandDuration: Histogram<'command'>;
  readonly ready: Gauge;
}

export function createMetrics(options: MetricsOptions = {}): Metrics {
  const registry = new Registry();
  if (options.defaultLabels) registry.setDefaultLabels(options.defaultLabels);
  // Process metrics and nodejs_eventloop_lag_seconds (plus its percentiles).
  collectDefaultMetrics({
    register: registry,
    eventLoopMonitoringPrecision: options.eventLoopMonitoringPrecision ?? 10,
  });
  return {
    registry,
    httpRequestDuration: new Histogram({
      name: 'http_request_duration_seconds',
      help: 'HTTP request duration by route template (never the raw URL), method and status code.',
      labelNames: ['method', 'route', 'status_code'],
      buckets: [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10],
      registers: [registry],
    }),
    redisCommandDuration: new Histogram({
      name: 'herald_redis_command_duration_seconds',
      help: 'Redis command round-trip time by command name.',
      labelNames: ['command'],
      buckets: [0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 1],
      registers: [registry],
    }),
    ready: new Gauge({
      name: 'herald_ready',
      help: '1 when this node reports ready on /readyz, else 0.',
      registers: [registry],
    }),
  };
}

export { Counter, Gauge, Histogram, type Registry } from 'prom-client';
export { type MetricsPluginOptions, metricsPlugin } from './plugin.js';
export { createMetrics, type Metrics, type MetricsOptions } from './registry.js';
export { withZeroSeries } from './zero.js';

export { createMetrics, type Metrics, type MetricsOptions } from './registry.js';
export { metricsPlugin, type MetricsPluginOptions } from './plugin.js';
export { Counter, Gauge, Histogram, type Registry } from 'prom-client';

import type { FastifyContextConfig, FastifyInstance, FastifyPluginAsync } from 'fastify';
import fastifyPlugin from 'fastify-plugin';
import type { Metrics } from './registry.js';

export interface MetricsPluginOptions {
  readonly metrics: Metrics;
  /** Paths that serve the exposition format (the broker also answers `/metrics/prometheus`). */
  readonly paths?: readonly string[];
  /** Route config of the exposition routes (the broker declares their access level here). */
  readonly routeConfig?: FastifyContextConfig;
}

/** Label for requests no route matched: one value, so scanners cannot explode cardinality. */
const UNMATCHED_ROUTE = '__unmatched__';

const plugin: FastifyPluginAsync<MetricsPluginOptions> = async (app: FastifyInstance, options) => {
  const { metrics } = options;
  const startedAt = new WeakMap<object, number>();

  app.addHook('onRequest', async (request) => {
    startedAt.set(request, performance.now());
  });
  app.addHook('onResponse', async (request, reply) => {
    const started = startedAt.get(request);
    if (started === undefined) return;
    metrics.httpRequestDuration.observe(
      {
        method: request.method,
        route: request.routeOptions.url ?? UNMATCHED_ROUTE,
        status_code: String(reply.statusCode),
      },
      (performance.now() - started) / 1000,
    );
  });

  for (const path of options.paths ?? ['/metrics']) {
    app.get(path, { logLevel: 'warn', config: { ...options.routeConfig } }, async (_request, reply) => {
      reply.header('content-type', metrics.registry.contentType);
      return metrics.registry.metrics();
    });
  }
};

/** Serves `/metrics` and records `http_request_duration_seconds` for every request. */
export const metricsPlugin = fastifyPlugin(plugin, { name: 'herald-metrics', fastify: '5.x' });

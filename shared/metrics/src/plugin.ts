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

  // fastify times every reply from its route handler's start (`reply.elapsedTime`, ms): no
  // onRequest hook and no WeakMap entry per request (issue #14: the publish path's profile showed
  // both, and WeakMap entries are ephemerons every scavenge has to visit). Callback-style, as an
  // async hook costs a promise and a microtask turn per request.
  app.addHook('onResponse', (request, reply, done) => {
    metrics.httpRequestDuration.observe(
      {
        method: request.method,
        route: request.routeOptions.url ?? UNMATCHED_ROUTE,
        status_code: String(reply.statusCode),
      },
      reply.elapsedTime / 1000,
    );
    done();
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

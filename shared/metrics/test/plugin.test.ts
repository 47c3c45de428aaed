import assert from 'node:assert/strict';
import { test } from 'node:test';
import Fastify from 'fastify';
import { createMetrics, metricsPlugin } from '../src/index.js';

async function appWithMetrics(paths?: string[]) {
  const metrics = createMetrics({ defaultLabels: { service: 'test' } });
  const app = Fastify({ logger: false });
  await app.register(metricsPlugin, { metrics, ...(paths ? { paths } : {}) });
  app.get('/items/:id', async () => ({ ok: true }));
  return { app, metrics };
}

test('serves the exposition format with default process metrics and event-loop lag', async () => {
  const { app } = await appWithMetrics();
  const response = await app.inject({ url: '/metrics' });
  assert.equal(response.statusCode, 200);
  assert.match(response.headers['content-type'] as string, /text\/plain/);
  assert.match(response.body, /^# HELP process_resident_memory_bytes/m);
  assert.match(response.body, /^# HELP nodejs_eventloop_lag_seconds/m);
  assert.match(response.body, /^# HELP http_request_duration_seconds/m);
  assert.match(response.body, /^# HELP herald_redis_command_duration_seconds/m);
  assert.match(response.body, /service="test"/);
});

test('labels request durations by route template, never by raw URL', async () => {
  const { app, metrics } = await appWithMetrics();
  for (const id of ['1', '2', '3']) await app.inject({ url: `/items/${id}` });
  for (const path of ['/scan/a', '/scan/b']) await app.inject({ url: path });
  const { values } = await metrics.httpRequestDuration.get();
  const counts = values
    .filter((sample) => sample.metricName === 'http_request_duration_seconds_count')
    .map((sample) => [sample.labels.route, sample.labels.status_code, sample.value]);
  assert.deepEqual(counts, [
    ['/items/:id', '200', 3],
    ['__unmatched__', '404', 2],
  ]);
  const text = await metrics.registry.metrics();
  assert.doesNotMatch(text, /route="\/items\/1"/);
  assert.doesNotMatch(text, /\/scan\/a/);
});

test('serves every configured path', async () => {
  const { app } = await appWithMetrics(['/metrics', '/metrics/prometheus']);
  for (const url of ['/metrics', '/metrics/prometheus']) {
    const response = await app.inject({ url });
    assert.equal(response.statusCode, 200, url);
    assert.match(response.body, /process_cpu_user_seconds_total/);
  }
});

// Every metric the chart's alerts, dashboard and autoscalers read is exported by the running
// services: start one hub and one broker relaying to it (no Redis: the in-process backend), scrape /metrics, and
// look each name up among the `# HELP` lines (histogram series through their base name).

import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { ciValues, type K8sObject, ofKind, releaseName, render, repoRoot } from './helm.js';
import { dashboardQueries, metricNamesInPromQL } from './promql.js';
import {
  exportedMetrics,
  hubTestEnvironment,
  isExported,
  type RunningService,
  type ServiceName,
  startService,
} from './services.js';

const production = render({ valuesFiles: [ciValues.production] });
const exported = new Map<ServiceName, Map<string, string>>();
const running: RunningService[] = [];

before(async () => {
  const hub = await startService({ root: repoRoot, service: 'hub', env: hubTestEnvironment });
  running.push(hub);
  // With a hub to relay to: only then does the broker run the outbox relay and export its metrics.
  const broker = await startService({
    root: repoRoot,
    service: 'broker',
    env: {
      BROKER_HUB_URL: `${hub.baseUrl}/.well-known/mercure`,
      BROKER_HUB_JWT_KEY: hubTestEnvironment.MERCURE_PUBLISHER_JWT_KEY ?? '',
    },
  });
  running.push(broker);
  for (const service of running) {
    const response = await fetch(`${service.baseUrl}/metrics`);
    assert.equal(response.status, 200, `${service.name} /metrics`);
    exported.set(service.name, exportedMetrics(await response.text()));
  }
});

after(async () => {
  await Promise.all(running.map((service) => service.stop()));
});

/** Names read by `queries` that `service` does not export, as "name (query)" lines. */
function missing(service: ServiceName, queries: readonly string[]): string[] {
  const metrics = exported.get(service);
  assert.ok(metrics && metrics.size > 0, `${service} exported no metrics`);
  const misses: string[] = [];
  for (const query of queries) {
    for (const name of metricNamesInPromQL(query)) {
      if (!isExported(name, metrics)) misses.push(`${service}: ${name}  (in ${query})`);
    }
  }
  return misses;
}

function ruleExpressions(prometheusRule: K8sObject): string[] {
  return prometheusRule.spec.groups.flatMap((group: { rules: { expr: string }[] }) =>
    group.rules.map((rule) => rule.expr),
  );
}

test('every metric in the PrometheusRule expressions is exported by its service', () => {
  const misses: string[] = [];
  for (const service of ['hub', 'broker'] as const) {
    const rule = ofKind(production, 'PrometheusRule').find(
      (object) => object.metadata.name === `${releaseName}-${service}`,
    );
    assert.ok(rule, `no PrometheusRule for the ${service}`);
    misses.push(...missing(service, ruleExpressions(rule)));
  }
  assert.deepEqual(misses, []);
});

test('every metric in the Grafana dashboard queries is exported by the service its panel reads', () => {
  const configMap = ofKind(production, 'ConfigMap').find(
    (object) => object.metadata.name === `${releaseName}-dashboard`,
  );
  assert.ok(configMap);
  const queries = dashboardQueries(JSON.parse(configMap.data['herald.json']));
  const misses: string[] = [];
  for (const { expr, variable } of queries) {
    // The job variables are defined from one service's metric; panels select a job through them.
    const hubOnly = variable === 'hub_job' || (expr.includes('$hub_job') && !expr.includes('$broker_job'));
    const brokerOnly =
      variable === 'broker_job' || (expr.includes('$broker_job') && !expr.includes('$hub_job'));
    // Panels over both jobs, and the namespace variable, read shared metrics: both must export them.
    if (!brokerOnly) misses.push(...missing('hub', [expr]));
    if (!hubOnly) misses.push(...missing('broker', [expr]));
  }
  assert.deepEqual(misses, []);
});

test('the HPA custom metrics are exported by their service', () => {
  const misses: string[] = [];
  for (const hpa of ofKind(production, 'HorizontalPodAutoscaler')) {
    const service = hpa.metadata.labels?.['app.kubernetes.io/component'] as ServiceName;
    for (const metric of hpa.spec.metrics) {
      if (metric.type === 'Pods') misses.push(...missing(service, [metric.pods.metric.name]));
    }
  }
  assert.deepEqual(misses, []);
});

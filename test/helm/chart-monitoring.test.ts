// ServiceMonitor, PrometheusRule and the Grafana dashboard ConfigMap. Every metric they read must
// be a name from docs/contracts.md (alert-metrics.test.ts checks the services export them).

import assert from 'node:assert/strict';
import { test } from 'node:test';
import { contractMetricFor, contractMetricNames } from './contract.js';
import {
  ciValues,
  componentName,
  find,
  type K8sObject,
  ofKind,
  releaseName,
  releaseNamespace,
  render,
} from './helm.js';
import { dashboardQueries, metricNamesInPromQL } from './promql.js';

const production = render({ valuesFiles: [ciValues.production] });
const contract = contractMetricNames();

interface Rule {
  alert?: string;
  expr: string;
  for?: string;
  labels?: Record<string, string>;
  annotations?: Record<string, string>;
}

function rulesOf(prometheusRule: K8sObject): Rule[] {
  return prometheusRule.spec.groups.flatMap((group: { rules: Rule[] }) => group.rules);
}

function dashboardOf(objects: readonly K8sObject[]): unknown {
  const configMap = find(objects, 'ConfigMap', `${releaseName}-dashboard`);
  return JSON.parse(configMap.data['herald.json']);
}

test('metricNamesInPromQL finds metrics, not functions, labels, keywords, durations or variables', () => {
  const cases: [string, string[]][] = [
    ['up', ['up']],
    [
      'min by (namespace, pod) (mercure_pubsub_probe_ok{job="x",namespace="y"}) == 0',
      ['mercure_pubsub_probe_ok'],
    ],
    [
      'histogram_quantile(0.99, sum by (le) (rate(herald_redis_command_duration_seconds_bucket{job=~"$hub_job"}[$__rate_interval])))',
      ['herald_redis_command_duration_seconds_bucket'],
    ],
    ['sum(rate(a_total[5m])) > 3 * sum(rate(a_total[1h] offset 1d)) and on (namespace) b', ['a_total', 'b']],
    ['label_values(herald_ready, namespace)', ['herald_ready']],
    [
      'label_values(mercure_subscribers_connected{namespace="$namespace"}, job)',
      ['mercure_subscribers_connected'],
    ],
    ['max without (instance) (x:recorded:rate5m) > 1e3', ['x:recorded:rate5m']],
  ];
  for (const [expression, expected] of cases) {
    assert.deepEqual([...metricNamesInPromQL(expression)].sort(), expected.sort(), expression);
  }
});

test("ServiceMonitors scrape /metrics on the http port of their own component's Service", () => {
  for (const component of ['hub', 'broker'] as const) {
    const monitor = find(production, 'ServiceMonitor', componentName(component));
    const service = find(production, 'Service', componentName(component));
    assert.equal(monitor.apiVersion, 'monitoring.coreos.com/v1');
    assert.equal(monitor.metadata.labels?.release, 'kube-prometheus-stack');
    for (const [key, value] of Object.entries(monitor.spec.selector.matchLabels)) {
      assert.equal(service.metadata.labels?.[key], value, `Service lacks ${key}`);
    }
    assert.deepEqual(monitor.spec.namespaceSelector, { matchNames: [releaseNamespace] });
    assert.deepEqual(monitor.spec.endpoints, [
      { port: 'http', path: '/metrics', scheme: 'http', interval: '15s', scrapeTimeout: '10s' },
    ]);
  }
  const tls = find(render({ valuesFiles: [ciValues.tls] }), 'ServiceMonitor', componentName('hub'));
  assert.equal(tls.spec.endpoints[0].scheme, 'https');
  assert.equal(tls.spec.endpoints[0].tlsConfig.serverName, 'herald-hub');
});

test("PrometheusRules carry the required alerts, scoped to this release's job and namespace", () => {
  const expected = {
    hub: [
      'HeraldHubPubSubProbeFailing',
      'HeraldHubSlowSubscriberDisconnects',
      'HeraldHubAuthFailuresSpike',
      'HeraldHubRedisLatencyHigh',
      'HeraldHubNotReady',
    ],
    broker: [
      'HeraldBrokerDeadLetterQueueGrowing',
      'HeraldBrokerOldestPendingMessageTooOld',
      'HeraldConsumerGroupLagTooOld',
      'HeraldBrokerOutboxLagging',
      'HeraldBrokerAuthFailuresSpike',
      'HeraldBrokerRedisLatencyHigh',
      'HeraldBrokerBodyBudgetRefusals',
      'HeraldBrokerNotReady',
    ],
  };
  for (const component of ['hub', 'broker'] as const) {
    const prometheusRule = find(production, 'PrometheusRule', componentName(component));
    assert.equal(prometheusRule.apiVersion, 'monitoring.coreos.com/v1');
    assert.equal(prometheusRule.metadata.labels?.release, 'kube-prometheus-stack');
    const rules = rulesOf(prometheusRule);
    assert.deepEqual(
      rules.map((rule) => rule.alert),
      expected[component],
    );
    for (const rule of rules) {
      assert.match(
        rule.expr,
        new RegExp(`job="${componentName(component)}",namespace="${releaseNamespace}"`),
        rule.alert,
      );
      assert.match(rule.for ?? '', /^\d+m$/, `${rule.alert} needs a for: duration`);
      assert.ok(['critical', 'warning'].includes(rule.labels?.severity ?? ''), `${rule.alert} severity`);
      assert.equal(rule.labels?.team, 'platform', 'alertLabels reach every alert');
      assert.ok(rule.annotations?.summary && rule.annotations.description, `${rule.alert} annotations`);
      assert.match(
        `${rule.annotations.summary}${rule.annotations.description}`,
        /\{\{ \$(labels|value)/,
        'Prometheus templates survive Helm',
      );
      assert.equal(balanced(rule.expr), true, `${rule.alert}: unbalanced brackets in ${rule.expr}`);
    }
  }
  const broker = rulesOf(find(production, 'PrometheusRule', componentName('broker')));
  const oldest = broker.find((rule) => rule.alert === 'HeraldBrokerOldestPendingMessageTooOld');
  assert.match(oldest?.expr ?? '', /> 300$/, 'thresholds come from values');
});

test('monitoring objects are off by default and follow their component', () => {
  const defaults = render({ valuesFiles: [ciValues.default] });
  for (const kind of ['ServiceMonitor', 'PrometheusRule', 'ConfigMap'])
    assert.deepEqual(ofKind(defaults, kind), [], kind);
  const hubOnly = render({ valuesFiles: [ciValues.hubOnly] });
  assert.deepEqual(
    ofKind(hubOnly, 'PrometheusRule').map((rule) => rule.metadata.name),
    [componentName('hub')],
  );
  assert.deepEqual(
    ofKind(hubOnly, 'ServiceMonitor').map((monitor) => monitor.metadata.name),
    [componentName('hub')],
  );
});

test('every metric in the alerts and the dashboard is a docs/contracts.md name', () => {
  const queries = [
    ...ofKind(production, 'PrometheusRule').flatMap((rule) => rulesOf(rule).map((entry) => entry.expr)),
    ...dashboardQueries(dashboardOf(production)).map((query) => query.expr),
  ];
  assert.ok(queries.length > 30);
  const used = new Set<string>();
  for (const query of queries) {
    for (const name of metricNamesInPromQL(query)) {
      used.add(name);
      assert.ok(contractMetricFor(name, contract), `${name} (in ${query}) is not in docs/contracts.md`);
    }
  }
  // The dashboard shows every service-specific contract metric at least once.
  for (const name of contract) {
    if (!/^(mercure_|herald_broker_)/.test(name)) continue;
    assert.ok(
      [...used].some((series) => contractMetricFor(series, contract) === name),
      `${name} is on no panel or alert`,
    );
  }
});

test('Grafana dashboard ConfigMap: sidecar label, valid JSON, datasource variable on every panel', () => {
  const configMap = find(production, 'ConfigMap', `${releaseName}-dashboard`);
  assert.equal(configMap.metadata.labels?.grafana_dashboard, '1');
  assert.equal(configMap.metadata.annotations?.grafana_folder, 'Herald');
  const dashboard = dashboardOf(production) as {
    uid: string;
    panels: { type: string; datasource?: { uid: string }; targets?: { expr: string }[] }[];
    templating: { list: { name: string }[] };
  };
  assert.equal(dashboard.uid, 'herald-overview');
  assert.deepEqual(
    dashboard.templating.list.map((variable) => variable.name),
    ['datasource', 'namespace', 'hub_job', 'broker_job'],
  );
  const panels = dashboard.panels.filter((panel) => panel.type !== 'row');
  assert.ok(panels.length >= 20);
  for (const panel of panels) {
    // biome-ignore lint/suspicious/noTemplateCurlyInString: Grafana's variable syntax, not a JS template
    assert.equal(panel.datasource?.uid, '${datasource}');
    assert.ok(panel.targets && panel.targets.length > 0);
    for (const target of panel.targets) {
      assert.match(target.expr, /namespace="\$namespace"/, 'panels are scoped to the selected namespace');
      assert.equal(balanced(target.expr), true, target.expr);
    }
  }
});

function balanced(expression: string): boolean {
  const pairs: Record<string, string> = { ')': '(', ']': '[', '}': '{' };
  const stack: string[] = [];
  for (const character of expression.replace(/"(?:[^"\\]|\\.)*"/g, '""')) {
    if ('([{'.includes(character)) stack.push(character);
    else if (character in pairs && stack.pop() !== pairs[character]) return false;
  }
  return stack.length === 0;
}

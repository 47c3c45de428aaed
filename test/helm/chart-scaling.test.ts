// HorizontalPodAutoscaler and PodDisruptionBudget toggles.

import assert from 'node:assert/strict';
import { test } from 'node:test';
import { ciValues, componentName, find, ofKind, render, templateChart } from './helm.js';

const production = render({ valuesFiles: [ciValues.production] });

test('production: an autoscaling/v2 HPA per component on CPU plus a Pods metric; Deployments leave replicas to it', () => {
  const expectedMetric = { hub: 'mercure_subscribers_connected', broker: 'herald_broker_pending_messages' };
  for (const component of ['hub', 'broker'] as const) {
    const hpa = find(production, 'HorizontalPodAutoscaler', componentName(component));
    assert.equal(hpa.apiVersion, 'autoscaling/v2');
    assert.deepEqual(hpa.spec.scaleTargetRef, {
      apiVersion: 'apps/v1',
      kind: 'Deployment',
      name: componentName(component),
    });
    assert.equal(hpa.spec.minReplicas, 3);
    assert.ok(hpa.spec.maxReplicas > hpa.spec.minReplicas);
    const [cpu, custom] = hpa.spec.metrics;
    assert.deepEqual(cpu, {
      type: 'Resource',
      resource: { name: 'cpu', target: { type: 'Utilization', averageUtilization: 60 } },
    });
    assert.equal(custom.type, 'Pods');
    assert.equal(custom.pods.metric.name, expectedMetric[component]);
    assert.equal(custom.pods.target.type, 'AverageValue');
    assert.equal(typeof custom.pods.target.averageValue, 'string');
    assert.ok(hpa.spec.behavior.scaleDown.stabilizationWindowSeconds >= 300, 'scale-down must be slow');
    assert.equal(find(production, 'Deployment', componentName(component)).spec.replicas, undefined);
  }
});

test('no HPA by default; CPU can be dropped for a custom metric only; a metric-less HPA is refused', () => {
  assert.deepEqual(ofKind(render({ valuesFiles: [ciValues.default] }), 'HorizontalPodAutoscaler'), []);
  const customOnly = render({
    valuesFiles: [ciValues.default],
    set: [
      'hub.autoscaling.enabled=true',
      'hub.autoscaling.targetCPUUtilizationPercentage=null',
      'hub.autoscaling.customMetric.enabled=true',
    ],
  });
  const metrics = find(customOnly, 'HorizontalPodAutoscaler', componentName('hub')).spec.metrics;
  assert.deepEqual(
    metrics.map((metric: { type: string }) => metric.type),
    ['Pods'],
  );
  const none = templateChart({
    valuesFiles: [ciValues.default],
    set: ['hub.autoscaling.enabled=true', 'hub.autoscaling.targetCPUUtilizationPercentage=null'],
  });
  assert.notEqual(none.status, 0);
  assert.match(none.stderr, /hub\.autoscaling has no metric/);
  const inverted = templateChart({
    valuesFiles: [ciValues.default],
    set: [
      'broker.autoscaling.enabled=true',
      'broker.autoscaling.minReplicas=5',
      'broker.autoscaling.maxReplicas=2',
    ],
  });
  assert.notEqual(inverted.status, 0);
  assert.match(inverted.stderr, /minReplicas is above maxReplicas/);
});

test('PDB only when the minimum replica count is above 1', () => {
  const cases: { set: string[]; hub: boolean }[] = [
    { set: [], hub: true },
    { set: ['hub.replicaCount=1'], hub: false },
    {
      set: ['hub.replicaCount=1', 'hub.autoscaling.enabled=true', 'hub.autoscaling.minReplicas=2'],
      hub: true,
    },
    {
      set: ['hub.replicaCount=3', 'hub.autoscaling.enabled=true', 'hub.autoscaling.minReplicas=1'],
      hub: false,
    },
    { set: ['hub.podDisruptionBudget.enabled=false'], hub: false },
  ];
  for (const { set, hub } of cases) {
    const objects = render({ valuesFiles: [ciValues.default], set });
    const budgets = ofKind(objects, 'PodDisruptionBudget').map((budget) => budget.metadata.name);
    assert.equal(budgets.includes(componentName('hub')), hub, `--set ${set.join(' ')}`);
    assert.ok(budgets.includes(componentName('broker')), 'the broker is untouched');
  }
});

test('PDB shape: maxUnavailable by default, minAvailable when set, unhealthy pods evictable', () => {
  const hub = find(production, 'PodDisruptionBudget', componentName('hub'));
  assert.equal(hub.apiVersion, 'policy/v1');
  assert.equal(hub.spec.maxUnavailable, 1);
  assert.equal(hub.spec.minAvailable, undefined);
  assert.equal(hub.spec.unhealthyPodEvictionPolicy, 'AlwaysAllow');
  const broker = find(production, 'PodDisruptionBudget', componentName('broker'));
  assert.equal(broker.spec.minAvailable, 2);
  assert.equal(broker.spec.maxUnavailable, undefined);
});

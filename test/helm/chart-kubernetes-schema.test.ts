// Offline Kubernetes schema check: every core/apps/autoscaling/policy/networking object rendered
// from every ci values file validates against kubernetes-models (types, required fields, enums;
// unknown fields are not detected). Custom resources get structural assertions instead.

import assert from 'node:assert/strict';
import { test } from 'node:test';
import { Deployment } from 'kubernetes-models/apps/v1';
import { HorizontalPodAutoscaler } from 'kubernetes-models/autoscaling/v2';
import { Ingress, NetworkPolicy } from 'kubernetes-models/networking.k8s.io/v1';
import { PodDisruptionBudget } from 'kubernetes-models/policy/v1';
import { ConfigMap, Secret, Service, ServiceAccount } from 'kubernetes-models/v1';
import { ciValues, type K8sObject, render } from './helm.js';

type Model = new (data: any) => { validate(): void };

const models: Record<string, Model> = {
  'v1/ConfigMap': ConfigMap,
  'v1/Secret': Secret,
  'v1/Service': Service,
  'v1/ServiceAccount': ServiceAccount,
  'apps/v1/Deployment': Deployment,
  'autoscaling/v2/HorizontalPodAutoscaler': HorizontalPodAutoscaler,
  'policy/v1/PodDisruptionBudget': PodDisruptionBudget,
  'networking.k8s.io/v1/Ingress': Ingress,
  'networking.k8s.io/v1/NetworkPolicy': NetworkPolicy,
};

const customResources: Record<string, (object: K8sObject) => void> = {
  'monitoring.coreos.com/v1/ServiceMonitor': (object) => {
    assert.equal(typeof object.spec.selector.matchLabels, 'object');
    assert.ok(Array.isArray(object.spec.endpoints) && object.spec.endpoints.length > 0);
    for (const endpoint of object.spec.endpoints) {
      assert.equal(typeof endpoint.port, 'string');
      assert.match(endpoint.path, /^\//);
      assert.ok(['http', 'https'].includes(endpoint.scheme));
      assert.match(endpoint.interval, /^\d+(ms|s|m|h)$/);
    }
  },
  'monitoring.coreos.com/v1/PrometheusRule': (object) => {
    assert.ok(Array.isArray(object.spec.groups) && object.spec.groups.length > 0);
    for (const group of object.spec.groups) {
      assert.equal(typeof group.name, 'string');
      for (const rule of group.rules) {
        assert.ok(typeof rule.alert === 'string' || typeof rule.record === 'string', 'alert or record');
        assert.equal(typeof rule.expr, 'string');
        if (rule.for !== undefined) assert.match(rule.for, /^\d+(ms|s|m|h)$/);
        for (const value of Object.values({ ...rule.labels, ...rule.annotations }))
          assert.equal(typeof value, 'string');
      }
    }
  },
  'keda.sh/v1alpha1/ScaledObject': (object) => {
    assert.equal(typeof object.spec.scaleTargetRef.name, 'string');
    assert.ok(Number.isInteger(object.spec.minReplicaCount) && Number.isInteger(object.spec.maxReplicaCount));
    assert.ok(object.spec.triggers.length > 0);
    for (const trigger of object.spec.triggers) {
      assert.equal(trigger.type, 'metrics-api');
      assert.match(trigger.metadata.url, /^https?:\/\/[^/]+\/api\/v1\/lag\?queue=/);
      assert.equal(typeof trigger.metadata.valueLocation, 'string');
      assert.match(trigger.metadata.targetValue, /^\d+$/);
      if (trigger.authenticationRef !== undefined)
        assert.equal(typeof trigger.authenticationRef.name, 'string');
    }
  },
  'gateway.networking.k8s.io/v1/HTTPRoute': (object) => {
    assert.ok(object.spec.parentRefs.length > 0);
    for (const parent of object.spec.parentRefs) assert.equal(typeof parent.name, 'string');
    for (const rule of object.spec.rules) {
      for (const backend of rule.backendRefs) {
        assert.equal(typeof backend.name, 'string');
        assert.ok(Number.isInteger(backend.port));
      }
      for (const value of Object.values(rule.timeouts ?? {})) assert.match(String(value), /^\d+(ms|s|m|h)$/);
    }
  },
};

for (const [name, file] of Object.entries(ciValues)) {
  test(`ci/${name}: every rendered object passes its Kubernetes schema`, () => {
    const objects = render({ valuesFiles: [file] });
    assert.ok(objects.length > 0);
    for (const object of objects) {
      const type = `${object.apiVersion}/${object.kind}`;
      const where = `${type} ${object.metadata.name}`;
      assert.match(object.metadata.name, /^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/, `${where}: DNS-1123 name`);
      assert.ok(object.metadata.name.length <= 63, `${where}: name too long`);
      const model = models[type];
      const structural = customResources[type];
      assert.ok(model || structural, `${where}: no schema check registered for this kind`);
      if (model) assert.doesNotThrow(() => new model(object).validate(), where);
      else structural?.(object);
    }
  });
}

test('the schema check itself rejects a malformed object', () => {
  const [deployment] = render({ valuesFiles: [ciValues.default] }).filter(
    (object) => object.kind === 'Deployment',
  );
  assert.ok(deployment);
  const broken = structuredClone(deployment);
  broken.spec.template.spec.containers[0].ports[0].containerPort = 'http';
  assert.throws(() => new Deployment(broken as never).validate(), /containerPort/);
});

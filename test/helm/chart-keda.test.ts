// The KEDA contract (issue #24): the chart's optional ScaledObject reads the broker's lag route,
// and what it reads there is what the broker answers. Rendered offline (no cluster, no KEDA);
// the route's side is a real broker (the embedded default).

import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import { stringify } from 'yaml';
import { BrokerNode, call } from '../broker/nodes.js';
import {
  ciValues,
  componentName,
  type K8sObject,
  ofKind,
  releaseNamespace,
  render,
  templateChart,
} from './helm.js';

const directory = mkdtempSync(join(tmpdir(), 'herald-keda-'));
after(() => rmSync(directory, { recursive: true, force: true }));

function valuesFile(scaledObjects: unknown[]): string {
  const file = join(directory, `keda-${Math.random().toString(36).slice(2)}.yaml`);
  writeFileSync(file, stringify({ broker: { keda: { scaledObjects } } }));
  return file;
}

const entry = {
  name: 'billing-consumer',
  deployment: 'billing',
  queue: 'shop.orders',
  group: 'billing & co',
  targetMessages: 100,
  maxReplicas: 20,
};

let broker: BrokerNode;
before(async () => {
  broker = await BrokerNode.start({});
});
after(() => broker?.stop());

function trigger(object: K8sObject): { url: URL; valueLocation: string; targetValue: string } {
  const [first] = object.spec.triggers;
  assert.equal(first.type, 'metrics-api');
  return {
    url: new URL(first.metadata.url),
    valueLocation: first.metadata.valueLocation,
    targetValue: first.metadata.targetValue,
  };
}

test('no ScaledObject unless one is listed', () => {
  assert.deepEqual(ofKind(render({ valuesFiles: [ciValues.default] }), 'ScaledObject'), []);
});

test('a listed ScaledObject targets the consumer Deployment and reads the lag route through the broker Service', () => {
  const [scaled, ...others] = ofKind(
    render({ valuesFiles: [ciValues.default, valuesFile([entry])] }),
    'ScaledObject',
  );
  assert.ok(scaled);
  assert.equal(others.length, 0);
  assert.equal(scaled.apiVersion, 'keda.sh/v1alpha1');
  assert.equal(scaled.metadata.name, 'billing-consumer');
  assert.equal(scaled.spec.scaleTargetRef.name, 'billing');
  assert.equal(scaled.spec.minReplicaCount, 0);
  assert.equal(scaled.spec.maxReplicaCount, 20);
  const { url, valueLocation, targetValue } = trigger(scaled);
  assert.equal(url.host, `${componentName('broker')}.${releaseNamespace}.svc:6632`);
  assert.equal(url.pathname, '/api/v1/lag');
  assert.equal(url.searchParams.get('queue'), 'shop.orders');
  assert.equal(url.searchParams.get('group'), 'billing & co');
  assert.equal(valueLocation, 'messages');
  assert.equal(targetValue, '100');
});

test("the broker answers the ScaledObject's path with a number at its valueLocation: the group's lag", async () => {
  const [scaled] = ofKind(render({ valuesFiles: [ciValues.default, valuesFile([entry])] }), 'ScaledObject');
  assert.ok(scaled);
  const { url, valueLocation } = trigger(scaled);
  const queue = url.searchParams.get('queue') as string;
  const group = url.searchParams.get('group') as string;
  const items = Array.from({ length: 7 }, (_, n) => ({ queue, partition: `p${n % 3}`, payload: n }));
  assert.equal((await call(broker.url, 'POST', '/api/v1/push', { items })).status, 201);
  // The group exists once it popped: one partition's messages leased, none resolved.
  const popped = await call(
    broker.url,
    'GET',
    `/api/v1/pop/queue/${queue}?consumerGroup=${encodeURIComponent(group)}`,
  );
  assert.equal(popped.status, 200);
  const reply = await call(broker.url, 'GET', `${url.pathname}${url.search}`);
  assert.equal(reply.status, 200);
  assert.equal(reply.body[valueLocation], 7);
});

test('the values schema refuses an entry without its queue, or with an unknown field', () => {
  const missing = templateChart({
    valuesFiles: [ciValues.default, valuesFile([{ ...entry, queue: undefined }])],
  });
  assert.notEqual(missing.status, 0);
  assert.match(missing.stderr, /queue/);
  const unknown = templateChart({ valuesFiles: [ciValues.default, valuesFile([{ ...entry, target: 5 }])] });
  assert.notEqual(unknown.status, 0);
  assert.match(unknown.stderr, /target/);
});

// The broker's outbox relay in the chart (broker.hub; docs/broker-outbox.md): off by default with
// none of the BROKER_HUB_* variables; on, the hub URL and algorithm as values and the signing
// key only from an existing Secret, with NetworkPolicy egress to the hub's port. A URL without
// a Secret is refused at render, as the broker would refuse it at boot.

import assert from 'node:assert/strict';
import { test } from 'node:test';
import { serviceEnvNames } from './contract.js';
import { ciValues, componentName, envOf, find, ofKind, render, templateChart } from './helm.js';

const HUB_VARIABLES = ['BROKER_HUB_URL', 'BROKER_HUB_JWT_KEY', 'BROKER_HUB_JWT_ALG'];

const relayOn = [
  'broker.hub.url=https://events.example.com/.well-known/mercure',
  'broker.hub.jwtAlg=RS256',
  'broker.hub.existingSecret=herald-hub-publisher',
];

test('relay off (the default): no BROKER_HUB_* variable, no Secret, no egress to a hub', () => {
  for (const file of [ciValues.default, ciValues.production]) {
    const broker = envOf(find(render({ valuesFiles: [file] }), 'Deployment', componentName('broker')));
    assert.deepEqual(
      HUB_VARIABLES.filter((name) => broker.has(name)),
      [],
      file,
    );
  }
  // A Secret named without a URL stays unused: a key without a URL would stop the broker.
  const secretOnly = render({
    valuesFiles: [ciValues.default],
    set: ['broker.hub.existingSecret=herald-hub-publisher'],
  });
  const broker = envOf(find(secretOnly, 'Deployment', componentName('broker')));
  assert.equal(broker.has('BROKER_HUB_JWT_KEY'), false);
});

test('relay on: URL and algorithm as values, the key from the existing Secret, all names the broker reads', () => {
  const objects = render({ valuesFiles: [ciValues.production], set: relayOn });
  const deployment = find(objects, 'Deployment', componentName('broker'));
  const env = envOf(deployment);
  assert.equal(env.get('BROKER_HUB_URL')?.value, 'https://events.example.com/.well-known/mercure');
  assert.equal(env.get('BROKER_HUB_JWT_ALG')?.value, 'RS256');
  assert.equal(env.get('BROKER_HUB_JWT_KEY')?.value, undefined, 'the key is never a plain value');
  assert.deepEqual(env.get('BROKER_HUB_JWT_KEY')?.valueFrom?.secretKeyRef, {
    name: 'herald-hub-publisher',
    key: 'hub-jwt-key',
  });
  const allowed = new Set<string>([...serviceEnvNames.common, ...serviceEnvNames.broker]);
  for (const name of env.keys())
    assert.ok(allowed.has(name), `the broker gets ${name}, which it does not read`);
  // The hub's own variables are untouched, and no ConfigMap carries the key.
  const hub = envOf(find(objects, 'Deployment', componentName('hub')));
  assert.deepEqual(
    HUB_VARIABLES.filter((name) => hub.has(name)),
    [],
  );
  for (const configMap of ofKind(objects, 'ConfigMap'))
    assert.doesNotMatch(JSON.stringify(configMap.data ?? {}), /hub-jwt-key|herald-hub-publisher/);

  const keyed = render({
    valuesFiles: [ciValues.default],
    set: [...relayOn, 'broker.hub.jwtAlg=HS256', 'broker.hub.secretKeys.jwtKey=publisher-jwt-key'],
  });
  const keyedEnv = envOf(find(keyed, 'Deployment', componentName('broker')));
  assert.equal(keyedEnv.get('BROKER_HUB_JWT_ALG')?.value, 'HS256');
  assert.equal(keyedEnv.get('BROKER_HUB_JWT_KEY')?.valueFrom?.secretKeyRef?.key, 'publisher-jwt-key');
});

test("relay on with a NetworkPolicy's egress: the hub's port is opened (explicit or by scheme)", () => {
  const egressPorts = (url: string) => {
    const objects = render({
      valuesFiles: [ciValues.default],
      set: [
        `broker.hub.url=${url}`,
        'broker.hub.existingSecret=herald-hub-publisher',
        'broker.networkPolicy.enabled=true',
        'broker.networkPolicy.egress.enabled=true',
      ],
    });
    const policy = find(objects, 'NetworkPolicy', componentName('broker'));
    return (policy.spec.egress as { ports: { port: number | string }[] }[]).flatMap((rule) =>
      rule.ports.map((entry) => String(entry.port)),
    );
  };
  assert.ok(egressPorts('https://events.example.com/.well-known/mercure').includes('443'));
  assert.ok(egressPorts('http://herald-hub.messaging.svc:8080/.well-known/mercure').includes('8080'));
});

test('a hub URL without a Secret, or not http(s), is refused at render', () => {
  const withoutSecret = templateChart({
    valuesFiles: [ciValues.default],
    set: ['broker.hub.url=https://events.example.com/.well-known/mercure'],
  });
  assert.notEqual(withoutSecret.status, 0);
  assert.match(withoutSecret.stderr, /broker\.hub\.url needs broker\.hub\.existingSecret/);
  const notHttp = templateChart({
    valuesFiles: [ciValues.default],
    set: ['broker.hub.url=redis://events.example.com', 'broker.hub.existingSecret=herald-hub-publisher'],
  });
  assert.notEqual(notHttp.status, 0);
  assert.match(notHttp.stderr, /broker\.hub\.url|pattern/);
  const badAlgorithm = templateChart({
    valuesFiles: [ciValues.default],
    set: [...relayOn, 'broker.hub.jwtAlg=none'],
  });
  assert.notEqual(badAlgorithm.status, 0);
  assert.match(badAlgorithm.stderr, /jwtAlg/);
});

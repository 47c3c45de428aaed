// How traffic reaches the pods: Ingress (SSE-friendly nginx settings), Gateway API HTTPRoute and
// NetworkPolicy.

import assert from 'node:assert/strict';
import { test } from 'node:test';
import { ciValues, componentName, containerOf, envOf, find, ofKind, render, templateChart } from './helm.js';

const both = render({ valuesFiles: [ciValues.ingressHttpRoute] });
const production = render({ valuesFiles: [ciValues.production] });

test('no Ingress, HTTPRoute or NetworkPolicy unless enabled', () => {
  const defaults = render({ valuesFiles: [ciValues.default] });
  for (const kind of ['Ingress', 'HTTPRoute', 'NetworkPolicy'])
    assert.deepEqual(ofKind(defaults, kind), [], kind);
});

test('hub Ingress: SSE annotations (no buffering, long timeouts), user annotations win, only the Mercure path', () => {
  const ingress = find(both, 'Ingress', componentName('hub'));
  const annotations = ingress.metadata.annotations ?? {};
  assert.equal(annotations['nginx.ingress.kubernetes.io/proxy-buffering'], 'off');
  assert.equal(annotations['nginx.ingress.kubernetes.io/proxy-request-buffering'], 'off');
  assert.equal(annotations['nginx.ingress.kubernetes.io/proxy-http-version'], '1.1');
  assert.equal(
    annotations['nginx.ingress.kubernetes.io/proxy-read-timeout'],
    '7200',
    'the user value overrides the default',
  );
  assert.equal(annotations['nginx.ingress.kubernetes.io/proxy-send-timeout'], '3600');
  assert.equal(ingress.spec.ingressClassName, 'nginx');
  assert.deepEqual(ingress.spec.tls, [{ secretName: 'mercure-tls', hosts: ['mercure.example.com'] }]);
  assert.deepEqual(ingress.spec.rules, [
    {
      host: 'mercure.example.com',
      http: {
        paths: [
          {
            path: '/.well-known/mercure',
            pathType: 'Prefix',
            backend: { service: { name: componentName('hub'), port: { name: 'http' } } },
          },
        ],
      },
    },
  ]);
});

test('broker Ingress: long-poll timeouts, no SSE-only settings, API path only', () => {
  const ingress = find(both, 'Ingress', componentName('broker'));
  const annotations = ingress.metadata.annotations ?? {};
  assert.equal(annotations['nginx.ingress.kubernetes.io/proxy-read-timeout'], '120');
  assert.equal(annotations['nginx.ingress.kubernetes.io/proxy-buffering'], undefined);
  assert.equal(ingress.spec.rules[0].http.paths[0].path, '/api/v1');
  assert.equal(ingress.spec.rules[0].http.paths[0].backend.service.name, componentName('broker'));
});

test('TLS listeners: the nginx backend protocol switches to HTTPS', () => {
  const ingress = find(render({ valuesFiles: [ciValues.tls] }), 'Ingress', componentName('hub'));
  assert.equal(ingress.metadata.annotations?.['nginx.ingress.kubernetes.io/backend-protocol'], 'HTTPS');
});

test('HTTPRoute: gateway.networking.k8s.io/v1, backend on the Service port, SSE timeouts disabled on the hub', () => {
  const hub = find(both, 'HTTPRoute', componentName('hub'));
  assert.equal(hub.apiVersion, 'gateway.networking.k8s.io/v1');
  assert.deepEqual(hub.spec.parentRefs, [
    { name: 'public', namespace: 'gateway-system', sectionName: 'https' },
  ]);
  assert.deepEqual(hub.spec.hostnames, ['mercure.example.com']);
  assert.equal(hub.spec.rules.length, 1);
  const [rule] = hub.spec.rules;
  assert.deepEqual(rule.matches, [{ path: { type: 'PathPrefix', value: '/.well-known/mercure' } }]);
  assert.deepEqual(rule.backendRefs, [{ name: componentName('hub'), port: 80 }]);
  assert.deepEqual(rule.timeouts, { request: '0s', backendRequest: '0s' });
  const broker = find(both, 'HTTPRoute', componentName('broker'));
  assert.deepEqual(broker.spec.rules[0].backendRefs, [{ name: componentName('broker'), port: 6632 }]);
  assert.deepEqual(broker.spec.rules[0].timeouts, { request: '120s' });

  const noParent = templateChart({ valuesFiles: [ciValues.default], set: ['hub.httpRoute.enabled=true'] });
  assert.notEqual(noParent.status, 0);
  assert.match(noParent.stderr, /hub\.httpRoute\.parentRefs is required/);
});

test('production NetworkPolicy: only listed peers reach the http port; egress limited to DNS, Redis, JWKS', () => {
  for (const component of ['hub', 'broker'] as const) {
    const policy = find(production, 'NetworkPolicy', componentName(component));
    assert.deepEqual(policy.spec.podSelector.matchLabels['app.kubernetes.io/component'], component);
    assert.deepEqual(policy.spec.policyTypes, ['Ingress', 'Egress']);
    assert.equal(policy.spec.ingress.length, 1);
    const [ingress] = policy.spec.ingress;
    assert.deepEqual(ingress.ports, [{ port: 'http', protocol: 'TCP' }]);
    assert.ok(ingress.from.length >= 2, 'ingress controller and Prometheus peers');
    const namespaces = ingress.from.map(
      (peer: { namespaceSelector?: { matchLabels?: Record<string, string> } }) =>
        peer.namespaceSelector?.matchLabels?.['kubernetes.io/metadata.name'],
    );
    assert.ok(namespaces.includes('monitoring'));
    const egressPorts = policy.spec.egress.map((rule: { ports: { port: number }[] }) =>
      rule.ports.map((port) => port.port),
    );
    assert.deepEqual(egressPorts, [[53, 53], [6380], [443]]);
    assert.deepEqual(policy.spec.egress[1].to, [{ ipBlock: { cidr: '10.90.0.0/24' } }]);
  }
});

test('NetworkPolicy defaults admit any source on the http port; no JWKS rule without a JWKS URL', () => {
  const objects = render({ valuesFiles: [ciValues.tls] });
  const policy = find(objects, 'NetworkPolicy', componentName('broker'));
  assert.deepEqual(policy.spec.ingress, [{ ports: [{ port: 'http', protocol: 'TCP' }] }]);
  assert.equal(policy.spec.egress.length, 2);
  assert.equal(policy.spec.egress[1].to, undefined);
  const locked = templateChart({
    valuesFiles: [ciValues.default],
    set: ['hub.networkPolicy.enabled=true', 'hub.networkPolicy.allowExternal=false'],
  });
  assert.notEqual(locked.status, 0, 'a policy admitting nobody is refused');
  assert.match(locked.stderr, /nothing could reach the pods/);
});

test('hub.h2c: the h2c listener gets its env, container port, Service port (appProtocol h2c) and policy port', () => {
  const off = render({ valuesFiles: [ciValues.production] });
  const on = render({
    valuesFiles: [ciValues.production],
    set: ['hub.h2c.enabled=true', 'hub.h2c.maxStreams=500'],
  });
  const hubEnv = (objects: typeof on) => envOf(find(objects, 'Deployment', componentName('hub')));
  assert.equal(hubEnv(off).get('MERCURE_H2C_PORT'), undefined, 'off by default');
  assert.equal(hubEnv(on).get('MERCURE_H2C_PORT')?.value, '8081');
  assert.equal(hubEnv(on).get('MERCURE_H2C_MAX_STREAMS')?.value, '500');
  const container = containerOf(find(on, 'Deployment', componentName('hub')));
  assert.deepEqual(
    container.ports?.find((port: { name: string }) => port.name === 'h2c'),
    { name: 'h2c', containerPort: 8081, protocol: 'TCP' },
  );
  const service = find(on, 'Service', componentName('hub'));
  assert.deepEqual(
    service.spec.ports.find((port: { name: string }) => port.name === 'h2c'),
    { name: 'h2c', port: 8081, targetPort: 'h2c', protocol: 'TCP', appProtocol: 'kubernetes.io/h2c' },
  );
  const policy = find(on, 'NetworkPolicy', componentName('hub'));
  assert.deepEqual(
    policy.spec.ingress[0].ports.map((port: { port: string }) => port.port),
    ['http', 'h2c'],
  );
  // The broker has no h2c listener, whatever the hub's setting.
  assert.equal(envOf(find(on, 'Deployment', componentName('broker'))).get('MERCURE_H2C_PORT'), undefined);
  assert.equal(find(on, 'Service', componentName('broker')).spec.ports.length, 1);
});

test('hub.h2c ports equal to the main ones are refused at render time', () => {
  const container = templateChart({
    valuesFiles: [ciValues.production],
    set: ['hub.h2c.enabled=true', 'hub.h2c.containerPort=8080'],
  });
  assert.notEqual(container.status, 0);
  assert.match(container.stderr, /hub\.h2c\.containerPort must differ from hub\.containerPort/);
  const service = templateChart({
    valuesFiles: [ciValues.production],
    set: ['hub.h2c.enabled=true', 'hub.h2c.servicePort=80', 'hub.service.port=80'],
  });
  assert.notEqual(service.status, 0);
  assert.match(service.stderr, /hub\.h2c\.servicePort must differ from hub\.service\.port/);
});

// The Deployments and Services: labels, ports, probes, environment wiring, shutdown timing,
// security context, secrets, and which objects each component toggle renders.

import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { test } from 'node:test';
import { serviceEnvNames } from './contract.js';
import {
  ciValues,
  componentName,
  componentOf,
  containerOf,
  envOf,
  find,
  type K8sObject,
  ofKind,
  releaseName,
  releaseNamespace,
  render,
  templateChart,
} from './helm.js';

const defaults = render({ valuesFiles: [ciValues.default] });
const production = render({ valuesFiles: [ciValues.production] });
const components = ['hub', 'broker'] as const;

function secretRef(deployment: K8sObject, variable: string) {
  return envOf(deployment).get(variable)?.valueFrom?.secretKeyRef;
}

test('defaults render both components and nothing optional', () => {
  const kinds = defaults.map((object) => `${object.kind}/${object.metadata.name}`).sort();
  assert.deepEqual(kinds, [
    `Deployment/${releaseName}-broker`,
    `Deployment/${releaseName}-hub`,
    `PodDisruptionBudget/${releaseName}-broker`,
    `PodDisruptionBudget/${releaseName}-hub`,
    `Secret/${releaseName}-hub`,
    `Secret/${releaseName}-redis`,
    `Service/${releaseName}-broker`,
    `Service/${releaseName}-hub`,
    `ServiceAccount/${releaseName}`,
  ]);
});

test('every object carries the standard labels and the release namespace', () => {
  for (const object of [...defaults, ...production]) {
    const labels = object.metadata.labels ?? {};
    const where = `${object.kind}/${object.metadata.name}`;
    assert.equal(labels['app.kubernetes.io/name'], 'herald', where);
    assert.equal(labels['app.kubernetes.io/instance'], releaseName, where);
    assert.equal(labels['app.kubernetes.io/managed-by'], 'Helm', where);
    assert.equal(labels['app.kubernetes.io/part-of'], 'herald', where);
    assert.match(labels['helm.sh/chart'] ?? '', /^herald-\d+\.\d+\.\d+/, where);
    assert.equal(object.metadata.namespace, releaseNamespace, where);
  }
});

test('Service, Deployment and PDB selectors agree per component, and never overlap', () => {
  for (const component of components) {
    const name = componentName(component);
    const deployment = find(defaults, 'Deployment', name);
    const service = find(defaults, 'Service', name);
    const budget = find(defaults, 'PodDisruptionBudget', name);
    const selector = deployment.spec.selector.matchLabels;
    assert.deepEqual(selector, {
      'app.kubernetes.io/name': 'herald',
      'app.kubernetes.io/instance': releaseName,
      'app.kubernetes.io/component': component,
    });
    assert.deepEqual(service.spec.selector, selector);
    assert.deepEqual(budget.spec.selector.matchLabels, selector);
    const podLabels = deployment.spec.template.metadata.labels;
    for (const [key, value] of Object.entries(selector)) assert.equal(podLabels[key], value);
    assert.equal(componentOf(deployment), component);
  }
});

test('ports: hub 8080 behind Service port 80, broker 6632 behind 6632, both named http', () => {
  const expected = { hub: { container: 8080, service: 80 }, broker: { container: 6632, service: 6632 } };
  for (const component of components) {
    const deployment = find(defaults, 'Deployment', componentName(component));
    const service = find(defaults, 'Service', componentName(component));
    assert.deepEqual(containerOf(deployment).ports, [
      { name: 'http', containerPort: expected[component].container, protocol: 'TCP' },
    ]);
    assert.equal(envOf(deployment).get('PORT')?.value, String(expected[component].container));
    assert.deepEqual(service.spec.ports, [
      {
        name: 'http',
        port: expected[component].service,
        targetPort: 'http',
        protocol: 'TCP',
        appProtocol: 'http',
      },
    ]);
  }
});

test('commands follow the operator contract (one image, command per component)', () => {
  for (const component of components) {
    const deployment = find(defaults, 'Deployment', componentName(component));
    const container = containerOf(deployment);
    assert.equal(container.name, component);
    assert.deepEqual(
      container.command,
      component === 'broker'
        ? ['node', '--heap-growing-percent=50', 'services/broker/dist/main.js']
        : ['node', 'services/hub/dist/main.js'],
    );
    assert.equal(container.image, 'herald:0.1.0');
  }
  const pinned = containerOf(find(production, 'Deployment', componentName('hub'))).image;
  assert.match(pinned, /^registry\.example\.com\/platform\/herald@sha256:[0-9a-f]{64}$/);
});

test('probes: readiness on /readyz, liveness and startup on /healthz, all on the http port', () => {
  for (const component of components) {
    const container = containerOf(find(defaults, 'Deployment', componentName(component)));
    assert.deepEqual(container.readinessProbe.httpGet, { path: '/readyz', port: 'http', scheme: 'HTTP' });
    assert.deepEqual(container.livenessProbe.httpGet, { path: '/healthz', port: 'http', scheme: 'HTTP' });
    assert.deepEqual(container.startupProbe.httpGet, { path: '/healthz', port: 'http', scheme: 'HTTP' });
    // Readiness reacts faster than liveness: a draining or Redis-less pod leaves the Service long before any restart.
    assert.ok(container.readinessProbe.periodSeconds < container.livenessProbe.periodSeconds);
  }
});

test('rolling updates never reduce capacity: maxSurge 1, maxUnavailable 0', () => {
  for (const component of components) {
    const deployment = find(defaults, 'Deployment', componentName(component));
    assert.deepEqual(deployment.spec.strategy, {
      type: 'RollingUpdate',
      rollingUpdate: { maxSurge: 1, maxUnavailable: 0 },
    });
    assert.equal(deployment.spec.replicas, 2);
  }
});

test('grace period covers preStop sleep + drain window + shutdown timeout', () => {
  const hub = find(defaults, 'Deployment', componentName('hub'));
  const hubEnv = envOf(hub);
  assert.equal(hubEnv.get('MERCURE_DRAIN_WINDOW')?.value, '10s');
  assert.equal(hubEnv.get('SHUTDOWN_TIMEOUT')?.value, '30s');
  assert.deepEqual(containerOf(hub).lifecycle.preStop.exec.command, ['sleep', '5']);
  assert.equal(hub.spec.template.spec.terminationGracePeriodSeconds, 5 + 10 + 30 + 5);

  const broker = find(defaults, 'Deployment', componentName('broker'));
  assert.equal(envOf(broker).has('MERCURE_DRAIN_WINDOW'), false);
  assert.equal(broker.spec.template.spec.terminationGracePeriodSeconds, 5 + 30 + 5);

  // Production values: preStop 10, drain 20, shutdown 30.
  const productionHub = find(production, 'Deployment', componentName('hub'));
  assert.equal(envOf(productionHub).get('MERCURE_DRAIN_WINDOW')?.value, '20s');
  assert.deepEqual(containerOf(productionHub).lifecycle.preStop.exec.command, ['sleep', '10']);
  assert.equal(productionHub.spec.template.spec.terminationGracePeriodSeconds, 10 + 20 + 30 + 5);

  const tooShort = templateChart({
    valuesFiles: [ciValues.default],
    set: ['hub.terminationGracePeriodSeconds=30'],
  });
  assert.notEqual(tooShort.status, 0);
  assert.match(tooShort.stderr, /hub\.terminationGracePeriodSeconds \(30\) is below .* = 45/);
  const drainTooLong = templateChart({
    valuesFiles: [ciValues.default],
    set: ['hub.drainWindowSeconds=30', 'hub.shutdownTimeoutSeconds=30'],
  });
  assert.notEqual(drainTooLong.status, 0, 'the hub bounds its drain by SHUTDOWN_TIMEOUT');
  assert.match(drainTooLong.stderr, /hub\.drainWindowSeconds must be below hub\.shutdownTimeoutSeconds/);
  const explicit = render({
    valuesFiles: [ciValues.default],
    set: ['broker.terminationGracePeriodSeconds=90'],
  });
  assert.equal(
    find(explicit, 'Deployment', componentName('broker')).spec.template.spec.terminationGracePeriodSeconds,
    90,
  );
});

test('REDIS_URL always comes from a Secret; the chart-made Secret holds the URL', () => {
  for (const objects of [defaults, production]) {
    for (const deployment of ofKind(objects, 'Deployment')) {
      const variable = envOf(deployment).get('REDIS_URL');
      assert.ok(
        variable?.valueFrom?.secretKeyRef,
        `${deployment.metadata.name}: REDIS_URL must be a secretKeyRef`,
      );
      assert.equal(variable.value, undefined);
    }
  }
  const hub = find(defaults, 'Deployment', componentName('hub'));
  assert.deepEqual(secretRef(hub, 'REDIS_URL'), { name: `${releaseName}-redis`, key: 'redis-url' });
  const secret = find(defaults, 'Secret', `${releaseName}-redis`);
  assert.equal(
    Buffer.from(secret.data['redis-url'], 'base64').toString(),
    'redis://redis-master.redis.svc:6379/0',
  );
  assert.deepEqual(secretRef(find(production, 'Deployment', componentName('broker')), 'REDIS_URL'), {
    name: 'herald-redis',
    key: 'url',
  });
});

test('without Redis, or without any component, the chart refuses to render', () => {
  const noRedis = templateChart({ set: ['hub.jwt.publisherJwtKey=k'] });
  assert.notEqual(noRedis.status, 0);
  assert.match(noRedis.stderr, /redis\.url or redis\.existingSecret is required/);
  const nothing = templateChart({
    valuesFiles: [ciValues.default],
    set: ['hub.enabled=false', 'broker.enabled=false'],
  });
  assert.notEqual(nothing.status, 0);
  assert.match(nothing.stderr, /nothing to deploy/);
});

test('hub keys: chart-made Secret by default, existingSecret wiring otherwise', () => {
  const hub = find(defaults, 'Deployment', componentName('hub'));
  assert.deepEqual(secretRef(hub, 'MERCURE_PUBLISHER_JWT_KEY'), {
    name: `${releaseName}-hub`,
    key: 'publisher-jwt-key',
  });
  assert.equal(envOf(hub).has('MERCURE_SUBSCRIBER_JWT_KEY'), false, 'no subscriber key was given');
  const secret = find(defaults, 'Secret', `${releaseName}-hub`);
  assert.deepEqual(Object.keys(secret.data), ['publisher-jwt-key']);

  // The hub refuses to boot without a publisher key source, even in development mode.
  for (const set of [['redis.url=redis://r:6379'], ['redis.url=redis://r:6379', 'hub.mercure.dev=true']]) {
    const noKey = templateChart({ set });
    assert.notEqual(noKey.status, 0, set.join(' '));
    assert.match(noKey.stderr, /hub: no publisher key/);
  }
});

test('existingSecret: no Secret rendered, every key read from the named Secrets', () => {
  const objects = render({ valuesFiles: [ciValues.existingSecret] });
  assert.deepEqual(ofKind(objects, 'Secret'), []);
  const hub = find(objects, 'Deployment', componentName('hub'));
  assert.deepEqual(secretRef(hub, 'REDIS_URL'), { name: 'shared-redis', key: 'connection-url' });
  assert.deepEqual(secretRef(hub, 'MERCURE_PUBLISHER_JWT_KEY'), { name: 'mercure-keys', key: 'publisher' });
  assert.deepEqual(secretRef(hub, 'MERCURE_SUBSCRIBER_JWT_KEY'), { name: 'mercure-keys', key: 'subscriber' });
  const broker = find(objects, 'Deployment', componentName('broker'));
  assert.deepEqual(secretRef(broker, 'REDIS_URL'), { name: 'shared-redis', key: 'connection-url' });
  assert.deepEqual(secretRef(broker, 'JWT_SECRET'), { name: 'queen-keys', key: 'hs-secret' });
  assert.equal(envOf(broker).has('JWT_PUBLIC_KEY'), false, 'secretKeys.publicKey "" skips the variable');
  assert.equal(envOf(broker).get('JWT_ENABLED')?.value, 'true');
  assert.equal(envOf(broker).get('JWT_ALGORITHM')?.value, 'auto');
  assert.deepEqual(secretRef(broker, 'QUEEN_ENCRYPTION_KEY'), {
    name: 'payload-keys',
    key: 'encryption-key',
  });

  const both = templateChart({ valuesFiles: [ciValues.existingSecret], set: ['hub.jwt.publisherJwtKey=k'] });
  assert.notEqual(both.status, 0);
  assert.match(both.stderr, /either existingSecret or the key values/);
});

test('broker payload encryption keys come from an existing Secret only, the old keys optional', () => {
  const broker = find(defaults, 'Deployment', componentName('broker'));
  assert.equal(envOf(broker).has('QUEEN_ENCRYPTION_KEY'), false, 'no Secret named: no key');
  const set = ['broker.encryption.existingSecret=payload-keys'];
  const keyed = find(render({ valuesFiles: [ciValues.default], set }), 'Deployment', componentName('broker'));
  assert.deepEqual(secretRef(keyed, 'QUEEN_ENCRYPTION_KEY'), { name: 'payload-keys', key: 'encryption-key' });
  assert.deepEqual(secretRef(keyed, 'QUEEN_ENCRYPTION_OLD_KEYS'), {
    name: 'payload-keys',
    key: 'encryption-old-keys',
    optional: true,
  });
  const noOld = find(
    render({ valuesFiles: [ciValues.default], set: [...set, 'broker.encryption.secretKeys.oldKeys='] }),
    'Deployment',
    componentName('broker'),
  );
  assert.equal(envOf(noOld).has('QUEEN_ENCRYPTION_OLD_KEYS'), false);
  const inValues = templateChart({ valuesFiles: [ciValues.default], set: ['broker.encryption.key=00'] });
  assert.notEqual(inValues.status, 0, 'a key in values is refused by the schema');
});

test('broker auth: the chart refuses what the broker would refuse at boot', () => {
  const rsWithoutKey = templateChart({
    valuesFiles: [ciValues.default],
    set: ['broker.auth.enabled=true', 'broker.auth.algorithm=RS256'],
  });
  assert.notEqual(rsWithoutKey.status, 0);
  assert.match(rsWithoutKey.stderr, /RS256 needs broker\.auth\.publicKey, jwksUrl or existingSecret/);
  const hsWithoutSecret = templateChart({
    valuesFiles: [ciValues.default],
    set: ['broker.auth.enabled=true'],
  });
  assert.notEqual(hsWithoutSecret.status, 0);
  const brokerOnly = render({ valuesFiles: [ciValues.brokerOnly] });
  const broker = find(brokerOnly, 'Deployment', componentName('broker'));
  assert.deepEqual(secretRef(broker, 'JWT_SECRET'), { name: `${releaseName}-broker`, key: 'jwt-secret' });
  assert.equal(envOf(broker).get('JWT_SKIP_PATHS')?.value, '/health,/metrics');
  assert.equal(envOf(broker).get('JWT_CLOCK_SKEW')?.value, '30s');
  assert.equal(envOf(broker).get('DEFAULT_BATCH_SIZE')?.value, '50');
});

test('the broker runs with NODE_OPTIONS from broker.nodeOptions (a young generation of 8 MB by default), the hub without', () => {
  const defaults = render({ valuesFiles: [ciValues.default] });
  const broker = find(defaults, 'Deployment', componentName('broker'));
  assert.equal(envOf(broker).get('NODE_OPTIONS')?.value, '--max-semi-space-size=8');
  assert.equal(envOf(find(defaults, 'Deployment', componentName('hub'))).get('NODE_OPTIONS'), undefined);
  const none = render({ valuesFiles: [ciValues.default], set: ['broker.nodeOptions='] });
  assert.equal(envOf(find(none, 'Deployment', componentName('broker'))).get('NODE_OPTIONS'), undefined);
});

test("this Node accepts the broker's default flags where the chart puts them (a V8 flag in NODE_OPTIONS stops the process)", () => {
  const broker = find(render({ valuesFiles: [ciValues.default] }), 'Deployment', componentName('broker'));
  const command: string[] = containerOf(broker).command;
  const flags = command.slice(1, -1);
  assert.ok(flags.length > 0, 'the default command carries Node flags');
  const nodeOptions = envOf(broker).get('NODE_OPTIONS')?.value;
  const started = spawnSync(process.execPath, [...flags, '-e', 'process.exit(0)'], {
    env: { PATH: process.env.PATH ?? '', NODE_OPTIONS: nodeOptions },
    encoding: 'utf8',
  });
  assert.equal(started.status, 0, started.stderr);
  // The check bites: the same V8 flag moved into NODE_OPTIONS is refused.
  const refused = spawnSync(process.execPath, ['-e', 'process.exit(0)'], {
    env: { PATH: process.env.PATH ?? '', NODE_OPTIONS: `${nodeOptions} ${flags.join(' ')}` },
    encoding: 'utf8',
  });
  assert.notEqual(refused.status, 0);
  assert.match(refused.stderr, /is not allowed in NODE_OPTIONS/);
});

test("values map onto the services' variables; no unknown MERCURE_/JWT_ name is ever rendered", () => {
  const allowed = {
    hub: new Set<string>([...serviceEnvNames.common, ...serviceEnvNames.hub]),
    broker: new Set<string>([...serviceEnvNames.common, ...serviceEnvNames.broker]),
  };
  for (const file of Object.values(ciValues)) {
    for (const deployment of ofKind(render({ valuesFiles: [file] }), 'Deployment')) {
      const component = componentOf(deployment) as 'hub' | 'broker';
      for (const name of envOf(deployment).keys()) {
        assert.ok(allowed[component].has(name), `${file}: ${component} gets ${name}, which it does not read`);
      }
    }
  }
  const hub = envOf(find(production, 'Deployment', componentName('hub')));
  assert.equal(hub.get('TRUSTED_PROXIES')?.value, '10.42.0.0/16');
  assert.equal(hub.get('MERCURE_CORS_ORIGINS')?.value, 'https://app.example.com');
  assert.equal(hub.get('MERCURE_SUBSCRIPTIONS')?.value, 'true');
  assert.equal(hub.get('MERCURE_PUBLIC_URL')?.value, 'https://events.example.com/.well-known/mercure');
  assert.equal(hub.get('MERCURE_DEV')?.value, 'false');
  assert.equal(hub.get('MERCURE_HEARTBEAT')?.value, '30s');
  assert.equal(hub.get('MERCURE_HISTORY_SIZE')?.value, '100000', 'integers must not render as 1e+05');
  assert.equal(hub.get('MERCURE_SUBSCRIBER_JWT_ALG')?.value, 'RS256');
  assert.equal(
    hub.get('MERCURE_SUBSCRIBER_JWKS_URL')?.value,
    'https://auth.example.com/.well-known/jwks.json',
  );
  assert.equal(hub.has('MERCURE_SUBSCRIBER_JWT_KEY'), false);
  assert.equal(hub.has('MERCURE_COOKIE_NAME'), false, 'unset values leave the service default');
  const broker = envOf(find(production, 'Deployment', componentName('broker')));
  assert.equal(broker.get('JWT_ROLE_WRITE_ONLY')?.value, 'queue.write');
  assert.equal(broker.get('JWT_ROLES_ARRAY_CLAIM')?.value, 'roles');
  assert.equal(broker.get('JWT_ISSUER')?.value, 'https://auth.example.com/');
  assert.equal(broker.get('DEFAULT_TIMEOUT')?.value, '30000');
  assert.equal(broker.get('BROKER_METRICS_MAX_QUEUES')?.value, '2000');
});

test('restricted security context, read-only root with an emptyDir /tmp, no API token', () => {
  for (const deployment of [...ofKind(defaults, 'Deployment'), ...ofKind(production, 'Deployment')]) {
    const pod = deployment.spec.template.spec;
    const container = containerOf(deployment);
    assert.equal(pod.securityContext.runAsNonRoot, true);
    assert.deepEqual(pod.securityContext.seccompProfile, { type: 'RuntimeDefault' });
    assert.equal(container.securityContext.runAsNonRoot, true);
    assert.equal(container.securityContext.allowPrivilegeEscalation, false);
    assert.equal(container.securityContext.readOnlyRootFilesystem, true);
    assert.deepEqual(container.securityContext.capabilities, { drop: ['ALL'] });
    assert.deepEqual(container.securityContext.seccompProfile, { type: 'RuntimeDefault' });
    assert.ok(container.securityContext.runAsUser > 0);
    assert.deepEqual(container.volumeMounts[0], { name: 'tmp', mountPath: '/tmp' });
    assert.deepEqual(pod.volumes[0], { name: 'tmp', emptyDir: { sizeLimit: '64Mi' } });
    assert.equal(pod.automountServiceAccountToken, false);
    assert.equal(pod.enableServiceLinks, false, 'service links could inject MERCURE_*/JWT_* names');
    assert.ok(container.resources.requests.cpu && container.resources.limits.memory);
  }
  assert.equal(find(defaults, 'ServiceAccount', releaseName).automountServiceAccountToken, false);
});

test('topology spread over zone and host, per component, counting the current ReplicaSet only', () => {
  const hub = find(defaults, 'Deployment', componentName('hub'));
  const constraints = hub.spec.template.spec.topologySpreadConstraints;
  assert.deepEqual(
    constraints.map((constraint: { topologyKey: string }) => constraint.topologyKey),
    ['topology.kubernetes.io/zone', 'kubernetes.io/hostname'],
  );
  for (const constraint of constraints) {
    assert.equal(constraint.whenUnsatisfiable, 'ScheduleAnyway');
    assert.deepEqual(constraint.labelSelector.matchLabels, hub.spec.selector.matchLabels);
    assert.deepEqual(constraint.matchLabelKeys, ['pod-template-hash']);
  }
  const hard = find(production, 'Deployment', componentName('broker')).spec.template.spec
    .topologySpreadConstraints;
  assert.equal(hard.length, 1);
  assert.equal(hard[0].whenUnsatisfiable, 'DoNotSchedule');
});

test('a Secret change rolls the pods (checksum annotation)', () => {
  const before = find(defaults, 'Deployment', componentName('hub')).spec.template.metadata.annotations[
    'checksum/secret'
  ];
  const changed = render({ valuesFiles: [ciValues.default], set: ['redis.url=redis://other:6379'] });
  const after = find(changed, 'Deployment', componentName('hub')).spec.template.metadata.annotations[
    'checksum/secret'
  ];
  assert.match(before, /^[0-9a-f]{64}$/);
  assert.notEqual(before, after);
});

test('TLS on the listeners: files mounted, probes and Service switch to HTTPS', () => {
  const objects = render({ valuesFiles: [ciValues.tls] });
  for (const component of components) {
    const deployment = find(objects, 'Deployment', componentName(component));
    const container = containerOf(deployment);
    const env = envOf(deployment);
    assert.equal(env.get('TLS_CERT_FILE')?.value, '/etc/herald/tls/tls.crt');
    assert.equal(env.get('TLS_KEY_FILE')?.value, '/etc/herald/tls/tls.key');
    assert.ok(
      container.volumeMounts.some(
        (mount: { name: string; readOnly?: boolean }) => mount.name === 'tls' && mount.readOnly,
      ),
    );
    const volume = deployment.spec.template.spec.volumes.find(
      (entry: { name: string }) => entry.name === 'tls',
    );
    assert.equal(volume.secret.secretName, `herald-${component}-tls`);
    for (const probe of ['readinessProbe', 'livenessProbe', 'startupProbe'])
      assert.equal(container[probe].httpGet.scheme, 'HTTPS');
    assert.equal(find(objects, 'Service', componentName(component)).spec.ports[0].appProtocol, 'https');
  }
  const missingSecret = templateChart({ valuesFiles: [ciValues.default], set: ['hub.tls.enabled=true'] });
  assert.notEqual(missingSecret.status, 0);
  assert.match(missingSecret.stderr, /hub\.tls\.enabled needs hub\.tls\.secretName/);
});

test('disabling a component removes every one of its objects', () => {
  const cases = [
    { file: ciValues.hubOnly, kept: 'hub', removed: 'broker' },
    { file: ciValues.brokerOnly, kept: 'broker', removed: 'hub' },
  ] as const;
  for (const { file, kept, removed } of cases) {
    const objects = render({ valuesFiles: [file] });
    const leftovers = objects.filter(
      (object) => componentOf(object) === removed || object.metadata.name.endsWith(`-${removed}`),
    );
    assert.deepEqual(
      leftovers.map((object) => `${object.kind}/${object.metadata.name}`),
      [],
      `${removed} objects left`,
    );
    assert.ok(objects.some((object) => object.kind === 'Deployment' && componentOf(object) === kept));
  }
  // The same with every optional object switched on (production values).
  const productionHubOnly = render({ valuesFiles: [ciValues.production], set: ['broker.enabled=false'] });
  assert.deepEqual(
    productionHubOnly.filter((object) => componentOf(object) === 'broker'),
    [],
  );
  assert.ok(ofKind(productionHubOnly, 'PrometheusRule').length === 1);
});

test('tenant limits: off by default; set, each reaches its service as the variable it documents', () => {
  const limited = new Map<string, string>();
  for (const deployment of ofKind(defaults, 'Deployment')) {
    for (const name of envOf(deployment).keys()) if (name.includes('_LIMIT_')) limited.set(name, '');
  }
  assert.deepEqual([...limited.keys()], [], 'no limit variable rendered by default');
  const objects = render({
    valuesFiles: [ciValues.default],
    set: [
      'hub.mercure.limitSubscriptions=20',
      'hub.mercure.limitPublishRate=500',
      'broker.limits.pushRate=1000000',
      'broker.limits.inFlight=2000',
    ],
    setString: ['hub.mercure.limitLease=45s', 'broker.limits.tenant=namespace'],
  });
  const hub = envOf(find(objects, 'Deployment', componentName('hub')));
  const broker = envOf(find(objects, 'Deployment', componentName('broker')));
  assert.deepEqual(
    ['MERCURE_LIMIT_SUBSCRIPTIONS', 'MERCURE_LIMIT_PUBLISH_RATE', 'MERCURE_LIMIT_LEASE'].map(
      (name) => hub.get(name)?.value,
    ),
    ['20', '500', '45s'],
  );
  assert.deepEqual(
    ['BROKER_LIMIT_TENANT', 'BROKER_LIMIT_PUSH_RATE', 'BROKER_LIMIT_IN_FLIGHT'].map(
      (name) => broker.get(name)?.value,
    ),
    ['namespace', '1000000', '2000'],
  );
  // The schema refuses what the services would refuse at boot.
  assert.notEqual(
    templateChart({ valuesFiles: [ciValues.default], setString: ['broker.limits.tenant=user'] }).status,
    0,
  );
  assert.notEqual(
    templateChart({ valuesFiles: [ciValues.default], set: ['broker.limits.inFlight=-1'] }).status,
    0,
  );
});

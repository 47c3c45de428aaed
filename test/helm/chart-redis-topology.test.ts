// redis.mode (issue #12): each topology renders exactly its variables into both Deployments,
// passwords only through a Secret; values.schema.json refuses values of another mode.

import assert from 'node:assert/strict';
import { test } from 'node:test';
import {
  type ChartOptions,
  ciValues,
  componentName,
  type EnvVar,
  envOf,
  find,
  type K8sObject,
  ofKind,
  releaseName,
  render,
  templateChart,
} from './helm.js';

const TOPOLOGY_VARIABLES = ['REDIS_URL', 'REDIS_SENTINELS', 'REDIS_CLUSTER_NODES'];

/** The REDIS_* entries of a Deployment's container, by name (secretKeyRef kept as rendered). */
function redisEnv(deployment: K8sObject): Record<string, EnvVar> {
  return Object.fromEntries([...envOf(deployment)].filter(([name]) => name.startsWith('REDIS_')));
}

function bothDeployments(objects: readonly K8sObject[]): K8sObject[] {
  const deployments = ofKind(objects, 'Deployment');
  assert.deepEqual(deployments.map((deployment) => deployment.metadata.name).sort(), [
    componentName('broker'),
    componentName('hub'),
  ]);
  return deployments;
}

test('standalone (the default mode): REDIS_URL from a Secret, nothing of the other topologies', () => {
  for (const deployment of bothDeployments(render({ valuesFiles: [ciValues.default] }))) {
    assert.deepEqual(redisEnv(deployment), {
      REDIS_URL: {
        name: 'REDIS_URL',
        valueFrom: { secretKeyRef: { name: `${releaseName}-redis`, key: 'redis-url' } },
      },
    });
  }
});

test('sentinel: sentinels and master name as values, both passwords from the existing Secret (optional keys)', () => {
  const objects = render({ valuesFiles: [ciValues.redisSentinel] });
  assert.equal(
    ofKind(objects, 'Secret').some((secret) => secret.metadata.name === `${releaseName}-redis`),
    false,
    'with existingSecret the chart makes no Redis Secret',
  );
  for (const deployment of bothDeployments(objects)) {
    assert.deepEqual(redisEnv(deployment), {
      REDIS_SENTINELS: {
        name: 'REDIS_SENTINELS',
        value:
          'redis-node-0.redis-headless.redis.svc:26379,redis-node-1.redis-headless.redis.svc:26379,redis-node-2.redis-headless.redis.svc:26379',
      },
      REDIS_SENTINEL_MASTER: { name: 'REDIS_SENTINEL_MASTER', value: 'mymaster' },
      REDIS_SENTINEL_PASSWORD: {
        name: 'REDIS_SENTINEL_PASSWORD',
        valueFrom: { secretKeyRef: { name: 'redis-credentials', key: 'sentinel-password', optional: true } },
      },
      REDIS_PASSWORD: {
        name: 'REDIS_PASSWORD',
        valueFrom: { secretKeyRef: { name: 'redis-credentials', key: 'redis-password', optional: true } },
      },
    } as Record<string, EnvVar>);
  }
  const broker = envOf(find(objects, 'Deployment', componentName('broker')));
  assert.deepEqual(
    [broker.get('BROKER_MIN_REPLICAS_ACK')?.value, broker.get('BROKER_MIN_REPLICAS_ACK_TIMEOUT')?.value],
    ['1', '500ms'],
    'broker.minReplicasAck and its timeout render as the broker variables',
  );
  const hub = envOf(find(objects, 'Deployment', componentName('hub')));
  assert.equal(hub.has('BROKER_MIN_REPLICAS_ACK'), false);
});

test('broker.bodyBudgetBytes and bodyBudgetWait render as the broker variables, 0 (off) included; unset, neither', () => {
  const broker = (set: string[]) =>
    envOf(find(render({ valuesFiles: [ciValues.default], set }), 'Deployment', componentName('broker')));
  const set = broker(['broker.bodyBudgetBytes=0', 'broker.bodyBudgetWait=5s']);
  assert.deepEqual(
    [set.get('BROKER_BODY_BUDGET_BYTES')?.value, set.get('BROKER_BODY_BUDGET_WAIT')?.value],
    ['0', '5s'],
  );
  const large = broker(['broker.bodyBudgetBytes=67108864']);
  assert.equal(
    large.get('BROKER_BODY_BUDGET_BYTES')?.value,
    '67108864',
    'integers must not render as 6.7e+07',
  );
  const defaults = broker([]);
  assert.equal(defaults.has('BROKER_BODY_BUDGET_BYTES'), false);
  assert.equal(defaults.has('BROKER_BODY_BUDGET_WAIT'), false);
});

test('cluster: seed nodes, user and TLS as values, the password in the chart-made Secret', () => {
  const objects = render({ valuesFiles: [ciValues.redisCluster] });
  const secret = find(objects, 'Secret', `${releaseName}-redis`);
  assert.deepEqual(Object.keys(secret.data), ['redis-password']);
  assert.equal(
    Buffer.from(secret.data['redis-password'], 'base64').toString(),
    'ci-redis-password-not-a-real-secret',
  );
  for (const deployment of bothDeployments(objects)) {
    assert.deepEqual(redisEnv(deployment), {
      REDIS_CLUSTER_NODES: {
        name: 'REDIS_CLUSTER_NODES',
        value: 'clustercfg.herald.abc123.use1.cache.amazonaws.com:6379',
      },
      REDIS_USERNAME: { name: 'REDIS_USERNAME', value: 'herald' },
      REDIS_PASSWORD: {
        name: 'REDIS_PASSWORD',
        valueFrom: { secretKeyRef: { name: `${releaseName}-redis`, key: 'redis-password' } },
      },
      REDIS_TLS: { name: 'REDIS_TLS', value: 'true' },
    });
    // A password change rolls the pods (checksum of the chart-made Secrets' inputs).
    const changed = find(
      render({ valuesFiles: [ciValues.redisCluster], set: ['redis.password=rotated'] }),
      'Deployment',
      deployment.metadata.name,
    );
    assert.notEqual(
      changed.spec.template.metadata.annotations['checksum/secret'],
      deployment.spec.template.metadata.annotations['checksum/secret'],
    );
  }
});

test('every mode renders exactly one of REDIS_URL, REDIS_SENTINELS, REDIS_CLUSTER_NODES', () => {
  for (const file of [ciValues.default, ciValues.production, ciValues.redisSentinel, ciValues.redisCluster]) {
    for (const deployment of ofKind(render({ valuesFiles: [file] }), 'Deployment')) {
      const present = TOPOLOGY_VARIABLES.filter((name) => envOf(deployment).has(name));
      assert.equal(present.length, 1, `${file}: ${deployment.metadata.name} has ${present.join(', ')}`);
    }
  }
});

test("sentinel mode opens the sentinels' ports in the NetworkPolicy egress", () => {
  const objects = render({
    valuesFiles: [ciValues.production],
    set: [
      'redis.mode=sentinel',
      'redis.existingSecret=herald-redis',
      'redis.sentinel.nodes={s-0:26379,s-1:26380,s-2}',
      'redis.sentinel.masterName=m',
    ],
  });
  for (const policy of ofKind(objects, 'NetworkPolicy')) {
    const redisRule = (policy.spec.egress as { ports: { port: number }[] }[]).find((rule) =>
      rule.ports.some((port) => port.port === 26380),
    );
    assert.ok(redisRule, `${policy.metadata.name}: no egress rule for the sentinels`);
    assert.deepEqual(
      redisRule.ports.map((port) => port.port),
      [6380, 26379, 26380],
    );
  }
});

// Values of another mode than redis.mode, or a mode without its own values: refused by the
// schema (or, for standalone without a URL, by validate.yaml) before anything renders.
const refused: { what: string; options: ChartOptions; message: RegExp }[] = [
  {
    what: 'cluster mode with a URL',
    options: { set: ['redis.mode=cluster', 'redis.cluster.nodes={a:6379}', 'redis.url=redis://r:6379'] },
    message: /\/redis\/url.*value must be ''/s,
  },
  {
    what: 'standalone with cluster nodes',
    options: { set: ['redis.url=redis://r:6379', 'redis.cluster.nodes={a:6379}'] },
    message: /\/redis\/cluster\/nodes.*maxItems/s,
  },
  {
    what: 'standalone with a data password (it belongs in the URL)',
    options: { set: ['redis.url=redis://r:6379', 'redis.password=pw'] },
    message: /\/redis\/password/,
  },
  {
    what: 'standalone with redis.tls (rediss:// chooses TLS)',
    options: { set: ['redis.url=redis://r:6379', 'redis.tls=true'] },
    message: /\/redis\/tls/,
  },
  {
    what: 'sentinel mode without a master name',
    options: { set: ['redis.mode=sentinel', 'redis.sentinel.nodes={s:26379}'] },
    message: /\/redis\/sentinel\/masterName.*minLength/s,
  },
  {
    what: 'sentinel mode without sentinels',
    options: { set: ['redis.mode=sentinel', 'redis.sentinel.masterName=m'] },
    message: /\/redis\/sentinel\/nodes.*minItems/s,
  },
  {
    what: 'cluster mode without nodes',
    options: { set: ['redis.mode=cluster'] },
    message: /\/redis\/cluster\/nodes.*minItems/s,
  },
  {
    what: 'cluster mode with a sentinel password',
    options: { set: ['redis.mode=cluster', 'redis.cluster.nodes={a:6379}', 'redis.sentinelPassword=pw'] },
    message: /\/redis\/sentinelPassword/,
  },
  {
    what: 'an unknown mode',
    options: { set: ['redis.mode=replicated', 'redis.url=redis://r:6379'] },
    message: /\/redis\/mode/,
  },
  {
    what: 'a seed node that is not host:port',
    options: { set: ['redis.mode=cluster', 'redis.cluster.nodes={redis://a:6379}'] },
    message: /\/redis\/cluster\/nodes\/0.*does not match pattern/s,
  },
  {
    what: 'standalone without a URL',
    options: { set: [] },
    message: /redis\.url or redis\.existingSecret is required/,
  },
];

for (const { what, options, message } of refused) {
  test(`refused: ${what}`, () => {
    const result = templateChart({
      ...options,
      set: ['hub.jwt.publisherJwtKey=ci-publisher-key-not-a-real-secret-0123456789', ...(options.set ?? [])],
    });
    assert.notEqual(result.status, 0, result.stdout.slice(0, 200));
    assert.match(result.stderr, message);
  });
}

// Fuzz suite, broker (issue #8): seeded random and boundary requests on every route of a real
// broker process, in-process backend with JWT on and Redis backend with JWT off. Properties: no
// 5xx, no crash, no hang (parked long-polls excepted), /healthz keeps answering, resident memory
// bounded. Replay a failure with FUZZ_SEED and FUZZ_ONLY (printed).
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { parseEnv } from '@herald/config';
import { stopTestRedis, testRedisUrl, uniquePrefix } from '@herald/testkit';
import { brokerSpec } from '../../services/broker/src/config.js';
import { startBroker } from '../../services/broker/src/index.js';
import { BROKER_SECRET, type ServiceNode, signToken, startNode } from '../security/nodes.js';
import { boundaryRequests, randomRequest, type Vocabulary } from './inputs.js';
import { type RouteSpec, registeredRoutes } from './routes.js';
import { assertFuzzPassed, fuzz, NODE_HEAP_MB, plan, summarize } from './runner.js';

/**
 * Long lists on the routes that read them: one past the documented 10,000 bound, and the two
 * sizes issue #8 reproduced (3,000 trace names kept +118 MiB; 200k DLQ ids overflowed the stack).
 */
const LISTS = {
  items: { path: '/api/v1/push', lengths: [10_001] },
  acknowledgments: { path: '/api/v1/ack/batch', lengths: [10_001] },
  operations: { path: '/api/v1/transaction', lengths: [10_001] },
  traceNames: { path: '/api/v1/traces', lengths: [3000] },
  dlqIds: { path: '/api/v1/dlq/requeue', lengths: [200_000] },
};

const VOCABULARY: Vocabulary = {
  queryNames: [
    'autoAck',
    'batch',
    'consumerGroup',
    'limit',
    'offset',
    'partition',
    'partitions',
    'queue',
    'subscriptionFrom',
    'subscriptionMode',
    'timeout',
    'wait',
    'namespace',
    'task',
    'status',
    'from',
    'to',
  ],
  bodyFields: [
    ...Object.keys(LISTS),
    'queue',
    'partition',
    'payload',
    'consumerGroup',
    'timestamp',
    'subscriptionMode',
    'subscriptionFrom',
    'enabled',
    'workerId',
    'transactionId',
    'partitionId',
    'leaseId',
    'status',
    'toEnd',
    'task',
    'namespace',
    'seconds',
    'options',
    'eventType',
    'traceName',
    'traceId',
    'data',
    'all',
    'type',
    'item',
    'ack',
    'error',
  ],
  authorizations: [
    `Bearer ${signToken({ role: 'admin' }, BROKER_SECRET)}`,
    `Bearer ${signToken({ role: 'read-write' }, BROKER_SECRET)}`,
    `Bearer ${signToken({ roles: ['read-only'] }, BROKER_SECRET)}`,
    `Bearer ${signToken({ role: 'write-only' }, BROKER_SECRET)}`,
    `Bearer ${signToken({ role: 'admin' }, 'not-the-broker-secret-0123456789abcdef')}`,
    'Bearer junk',
    'Basic dXNlcjpwYXNz',
    '',
  ],
};

let routes: RouteSpec[];

before(async () => {
  // The routes as the app registers them, read from an in-process broker.
  const broker = await startBroker(
    parseEnv(brokerSpec, { PORT: '0', HOST: '127.0.0.1', LOG_LEVEL: 'silent' }),
    {
      fastify: { logger: false },
    },
  );
  routes = registeredRoutes(broker.app);
  await broker.close();
});

after(async () => {
  await stopTestRedis();
});

const TARGETS = {
  'memory, JWT on': async () => ({ JWT_ENABLED: 'true', JWT_SECRET: BROKER_SECRET }),
  'redis, JWT off': async () => ({
    REDIS_URL: await testRedisUrl(),
    BROKER_KEY_PREFIX: uniquePrefix('fuzz'),
  }),
};

for (const [name, environment] of Object.entries(TARGETS)) {
  test(`broker (${name}): no 5xx, crash or hang; /healthz answers; memory bounded`, async () => {
    assert.ok(routes.length >= 30, `routes found: ${routes.map((route) => `${route.method} ${route.path}`)}`);
    const node: ServiceNode = await startNode('broker', {
      ...(await environment()),
      DEFAULT_TIMEOUT: '1000',
      NODE_OPTIONS: `--max-old-space-size=${NODE_HEAP_MB}`,
    });
    try {
      const requests = plan(boundaryRequests(routes, VOCABULARY, LISTS), randomRequest(routes, VOCABULARY));
      const report = await fuzz(node, requests);
      console.log(summarize(`broker/${name}`, report));
      assertFuzzPassed(report, node, 'the broker');
    } finally {
      await node.stop();
    }
  });
}

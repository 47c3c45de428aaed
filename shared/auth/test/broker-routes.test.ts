import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import {
  ACCESS_LEVELS,
  type AccessLevel,
  classifyBrokerRoute,
  isAccessLevel,
  isSkippedPath,
  routedPath,
  unroutedPath,
} from '../src/broker-routes.js';
import { DEFAULT_SKIP_PATHS } from '../src/broker-settings.js';

// [method, canonical path, level]: every class of the documented route table (docs/broker-api.md, "Routes").
// biome-ignore format: a table, one case per line
const ROUTES: readonly (readonly [string, string, AccessLevel])[] = [
  // public
  ['GET', '/health', 'public'],
  ['GET', '/healthz', 'public'],
  ['GET', '/readyz', 'public'],
  ['GET', '/readyz/extra', 'read-write'],
  ['GET', '/healthzz', 'read-write'],
  ['GET', '/console', 'public'],
  ['GET', '/console/', 'public'],
  ['GET', '/console/assets/index-3f2a.js', 'public'],
  ['GET', '/consoles', 'read-write'],
  ['GET', '/metrics', 'public'],
  ['GET', '/metrics/prometheus', 'public'],
  ['GET', '/', 'public'],
  ['GET', '/assets/app.3f2a.js', 'public'],
  ['GET', '/favicon.ico', 'public'],
  ['GET', '/favicon-32.png', 'public'],
  ['GET', '/auth/me', 'public'],
  ['POST', '/auth/login', 'public'],
  ['POST', '/auth/logout', 'public'],
  // admin
  ['GET', '/api/v1/system/maintenance', 'admin'],
  ['POST', '/api/v1/system/maintenance', 'admin'],
  ['POST', '/internal/api/inter-instance/notify', 'admin'],
  ['DELETE', '/api/v1/consumer-groups/billing', 'admin'],
  ['DELETE', '/api/v1/resources/queues/orders', 'admin'],
  ['POST', '/api/v1/stats/refresh', 'admin'],
  // read-only (reads)
  ['GET', '/status', 'read-only'],
  ['GET', '/api/v1/status', 'read-only'],
  ['GET', '/api/v1/status/queues', 'read-only'],
  ['GET', '/api/v1/analytics/throughput', 'read-only'],
  ['GET', '/api/v1/resources/queues', 'read-only'],
  ['GET', '/api/v1/resources/queues/orders', 'read-only'],
  ['GET', '/api/v1/messages', 'read-only'],
  ['GET', '/api/v1/messages/0192c1f1', 'read-only'],
  ['GET', '/api/v1/consumer-groups', 'read-only'],
  ['GET', '/api/v1/consumer-groups/billing/lag', 'read-only'],
  ['GET', '/api/v1/dlq', 'read-only'],
  ['GET', '/api/v1/lag', 'read-only'],
  ['HEAD', '/api/v1/lag', 'read-only'],
  ['POST', '/api/v1/lag', 'read-write'],
  ['GET', '/api/v1/traces/abc', 'read-only'],
  ['POST', '/streams/v1/state/get', 'read-only'],
  ['HEAD', '/api/v1/messages', 'read-only'],
  // write-only: POST /api/v1/push and only that
  ['POST', '/api/v1/push', 'write-only'],
  ['post', '/api/v1/push', 'write-only'],
  // read-write: consume, mutate, and everything unrecognised
  ['GET', '/api/v1/pop/queue/orders', 'read-write'],
  ['POST', '/api/v1/ack', 'read-write'],
  ['POST', '/api/v1/ack/batch', 'read-write'],
  ['POST', '/api/v1/transaction', 'read-write'],
  ['POST', '/api/v1/lease/0192/extend', 'read-write'],
  ['POST', '/api/v1/configure', 'read-write'],
  ['POST', '/api/v1/traces', 'read-write'],
  ['DELETE', '/api/v1/messages/orders/0192', 'read-write'],
  ['POST', '/api/v1/resources/queues', 'read-write'],
  ['PUT', '/api/v1/push', 'read-write'],
  ['GET', '/api/v1/push', 'read-write'],
  ['POST', '/status', 'read-write'],
  ['DELETE', '/api/v1/dlq', 'read-write'],
  ['POST', '/streams/v1/queries', 'read-write'],
  ['GET', '/no/such/route', 'read-write'],
  ['GET', '/healthcheck', 'read-write'],
  // a prefix ending in / covers its bare path; exact entries are exact
  ['GET', '/internal', 'admin'],
  ['POST', '/api/v1/push/', 'read-write'],
];

describe('route classification', () => {
  for (const [method, url, level] of ROUTES) {
    it(`${method} ${url} → ${level}`, () => {
      assert.equal(classifyBrokerRoute(method, url), level);
    });
  }

  it('covers every level', () => {
    assert.deepEqual(
      new Set(ROUTES.map(([, , level]) => level)),
      new Set(['public', 'admin', 'read-only', 'write-only', 'read-write']),
    );
  });
});

describe('access levels', () => {
  // [value, is a level]
  // biome-ignore format: a table, one case per line
  const cases: readonly (readonly [unknown, boolean])[] = [
    ...ACCESS_LEVELS.map((level) => [level, true] as const),
    ['Admin', false],
    ['', false],
    [undefined, false],
    [1, false],
    ['toString', false],
  ];
  for (const [value, expected] of cases) {
    it(`${JSON.stringify(value)} → ${expected}`, () => {
      assert.equal(isAccessLevel(value), expected);
    });
  }
});

describe("routed path: the matched pattern with the router's parameter values", () => {
  // [pattern, params, path]
  // biome-ignore format: a table, one case per line
  const cases: readonly (readonly [string, Record<string, unknown>, string])[] = [
    ['/api/v1/push', {}, '/api/v1/push'],
    ['/api/v1/pop/queue/:queue', { queue: 'orders' }, '/api/v1/pop/queue/orders'],
    ['/api/v1/pop/queue/:queue/partition/:partition', { queue: 'q', partition: 'p1' }, '/api/v1/pop/queue/q/partition/p1'],
    ['/api/v1/messages/:partitionId/:transactionId', { partitionId: 'a/b', transactionId: 't' }, '/api/v1/messages/a/b/t'],
    ['*', { '*': 'api/v1/push' }, 'api/v1/push'],
    ['/api/v1/x/:missing', {}, '/api/v1/x/:missing'],
  ];
  for (const [pattern, params, path] of cases) {
    it(`${pattern} ${JSON.stringify(params)} → ${path}`, () => {
      assert.equal(routedPath(pattern, params), path);
    });
  }
});

describe('unrouted path: how the router reads a target that matched nothing', () => {
  // [raw target, path]
  // biome-ignore format: a table, one case per line
  const cases: readonly (readonly [string, string])[] = [
    ['/docs/page?x=1#y', '/docs/page'],
    ['http://x/docs/page', '/docs/page'],
    ['HTTPS://x:443/docs?q', '/docs'],
    ['/%64ocs/a%2Fb', '/docs/a/b'],
    ['/bad%zzescape', '/bad%zzescape'],
    ['http://x', '/'],
    ['', '/'],
  ];
  for (const [raw, path] of cases) {
    it(`${JSON.stringify(raw)} → ${path}`, () => {
      assert.equal(unroutedPath(raw), path);
    });
  }
});

describe('skip paths: exact, or prefix for entries longer than one character ending in /', () => {
  // [skip list, path, skipped]
  // biome-ignore format: a table, one case per line
  const cases: readonly (readonly [readonly string[], string, boolean])[] = [
    [DEFAULT_SKIP_PATHS, '/health', true],
    [DEFAULT_SKIP_PATHS, '/health/deep', false],
    [DEFAULT_SKIP_PATHS, '/metrics', true],
    [DEFAULT_SKIP_PATHS, '/metrics/prometheus', true],
    [DEFAULT_SKIP_PATHS, '/', true],
    [DEFAULT_SKIP_PATHS, '/api/v1/push', false], // `/` skips only the root document
    [['/assets/'], '/assets/app.js', true],
    [['/assets/'], '/assets/deep/a.css', true],
    [['/assets/'], '/assets/', true],
    [['/assets/'], '/assets', false],
    [['/assets/'], '/assetsx/a.js', false],
    [['/docs'], '/docs', true],
    [['/docs'], '/docs/page', false],
    [['/api/v1/messages/'], '/api/v1/messages/abc', true],
    [[], '/health', false],
  ];
  for (const [skipPaths, path, skipped] of cases) {
    it(`[${skipPaths.join(',')}] ${path} → ${skipped ? 'skipped' : 'checked'}`, () => {
      assert.equal(isSkippedPath(path, skipPaths), skipped);
    });
  }
});

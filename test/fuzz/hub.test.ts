// Fuzz suite, hub (issue #8): seeded random and boundary requests on every route of a real hub
// process, in-process and Redis backends. Properties: no 5xx, no crash, no hang, /healthz keeps
// answering, resident memory bounded. Replay a failure with FUZZ_SEED and FUZZ_ONLY (printed).
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { stopTestRedis, testRedisUrl, uniquePrefix } from '@herald/testkit';
import { startTestHub } from '../../services/hub/test/helpers.js';
import {
  publisherToken,
  type ServiceNode,
  SUBSCRIBER_SECRET,
  signToken,
  startNode,
  subscriberToken,
} from '../security/nodes.js';
import type { RawRequest } from '../security/raw-http.js';
import { boundaryRequests, HOSTILE_SELECTOR, randomRequest, type Vocabulary } from './inputs.js';
import { type RouteSpec, registeredRoutes } from './routes.js';
import { assertFuzzPassed, fuzz, NODE_HEAP_MB, plan, summarize } from './runner.js';

const FEATURES = {
  MERCURE_SUBSCRIPTIONS: 'true',
  MERCURE_DEV: 'true',
  MERCURE_ANONYMOUS: 'true',
  MERCURE_CORS_ORIGINS: 'https://example.com',
  MERCURE_PUBLISH_ORIGINS: 'https://example.com',
};

const VOCABULARY: Vocabulary = {
  queryNames: [
    'topic',
    'matchExact',
    'matchURLPattern',
    'matchRegexp',
    'matchURITemplate',
    'matchNope',
    'match_exact',
    'match_urlpattern',
    'last_event_id',
    'lastEventID',
    'Last-Event-ID',
    'match',
    'matchType',
    'authorization',
    'access_token',
  ],
  bodyFields: ['topic', 'data', 'id', 'type', 'retry', 'private'],
  formFields: ['topic', 'data', 'id', 'type', 'retry', 'private', 'topic'],
  authorizations: [
    `Bearer ${publisherToken([{ match: '*' }], { mercure: { publish: [{ match: '*' }], subscribe: [{ match: '*' }] } })}`,
    `Bearer ${subscriberToken([{ match: '*' }], { payload: { user: 'fuzz' } })}`,
    `Bearer ${subscriberToken([{ match: 'https://example.com/{+path}', matchType: 'uri-template' }])}`,
    `Bearer ${subscriberToken([{ match: 'https://example.com/:id', matchType: 'urlpattern' }])}`,
    `Bearer ${subscriberToken([{ match: '^https://example.com/(a|b)+$', matchType: 'regexp' }])}`,
    `Bearer ${signToken({ mercure: { subscribe: [{ match: '*', matchType: 'nope' }] } }, SUBSCRIBER_SECRET)}`,
    'Bearer junk',
    'Bearer a.b.c',
    'Basic dXNlcjpwYXNz',
    '',
  ],
  baseHeaders: { 'x-forwarded-proto': 'https' },
};

/** The one 5xx the spec prescribes: 501 for a matchType query parameter the hub does not implement. */
const unsupportedMatchType = (status: number, body: string) =>
  status === 501 && /^Unsupported (topic )?matcher type/.test(body);

/** Issue #8's hostile selectors on every matcher parameter, with and without a token. */
function hostileSelectors(): RawRequest[] {
  const names = ['match', 'matchRegexp', 'matchURLPattern', 'matchURITemplate', 'matchExact'];
  return names.flatMap((name) =>
    ['', VOCABULARY.authorizations[1] as string].map((authorization) => ({
      method: 'GET',
      target: `/.well-known/mercure?${name}=${encodeURIComponent(HOSTILE_SELECTOR)}`,
      headers: { ...VOCABULARY.baseHeaders, ...(authorization ? { authorization } : {}) },
    })),
  );
}

let routes: RouteSpec[];

before(async () => {
  // The routes as the app registers them, read from an in-process hub with every feature on.
  const hub = await startTestHub('memory', FEATURES);
  routes = registeredRoutes(hub.server.app);
  await hub.close();
});

after(async () => {
  await stopTestRedis();
});

for (const backend of ['memory', 'redis'] as const) {
  test(`hub (${backend}): no 5xx, crash or hang; /healthz answers; memory bounded`, async () => {
    assert.ok(routes.length >= 10, `routes found: ${routes.map((route) => `${route.method} ${route.path}`)}`);
    const redis: Record<string, string> =
      backend === 'redis'
        ? { REDIS_URL: await testRedisUrl(), MERCURE_REDIS_PREFIX: uniquePrefix('fuzz') }
        : {};
    const node: ServiceNode = await startNode('hub', {
      ...FEATURES,
      ...redis,
      NODE_OPTIONS: `--max-old-space-size=${NODE_HEAP_MB}`,
    });
    try {
      const requests = plan(
        [...boundaryRequests(routes, VOCABULARY, {}), ...hostileSelectors()],
        randomRequest(routes, VOCABULARY),
      );
      const report = await fuzz(node, requests, unsupportedMatchType);
      const summary = summarize(`hub/${backend}`, report);
      console.log(summary);
      assertFuzzPassed(report, node, 'the hub');
    } finally {
      await node.stop();
    }
  });
}

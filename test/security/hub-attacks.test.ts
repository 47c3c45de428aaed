// Attack catalogue, hub (issue #8): one row per attack, each a real HTTP request written verbatim
// to a socket of a real hub process (HS256 keys, anonymous off, subscriptions API on), with the
// status the issue requires and, where it matters, the state or the log afterwards.
import assert from 'node:assert/strict';
import { after, before } from 'node:test';
import { waitFor } from '@herald/testkit';
import { SseStream } from '../../services/hub/test/helpers.js';
import { type AttackRow, assertBearerChallenge, registerCatalogue } from './catalogue.js';
import { PUBLISHER_SECRET, type ServiceNode, SUBSCRIBER_SECRET, startNode } from './nodes.js';
import { type RawRequest, rawRequest } from './raw-http.js';
import { hmacToken, nowSeconds, rsaKeyPair, rsaToken, stripSignature, unsecuredToken } from './tokens.js';

const HUB = '/.well-known/mercure';
const SECURE = { 'x-forwarded-proto': 'https' };
const APP_ORIGIN = 'https://app.example.com';

type Selector = { match: string; matchType?: string; payload?: unknown };
const subscriber = (subscribe: Selector[] | string[], extra: Record<string, unknown> = {}) =>
  hmacToken({ header: { alg: 'HS256' }, payload: { mercure: { subscribe }, ...extra } }, SUBSCRIBER_SECRET);
const publisher = (publish: Selector[], extra: Record<string, unknown> = {}) =>
  hmacToken({ header: { alg: 'HS256' }, payload: { mercure: { publish }, ...extra } }, PUBLISHER_SECRET);

const SUBSCRIBE_ALL = subscriber([{ match: '*' }]);
const PUBLISH_ALL = publisher([{ match: '*' }]);
const attackerKey = rsaKeyPair();

/** ~4 KiB of bounded repetitions: each costs RE2 a thousand program instructions. */
const HOSTILE_REGEXP = 'a{1000}'.repeat(585);
/** A URLPattern whose custom regex group is a huge RE2 program: each match costs program × topic. */
const HOSTILE_URLPATTERN = `https://example.com/:x(${'[a-z]{1,1000}'.repeat(300)})`;
/** 520 characters, as in issue #8. */
const LONG_TOPIC = `https://example.com/${'a'.repeat(500)}`;

let hub: ServiceNode;
const streams: SseStream[] = [];

function startHub(): Promise<ServiceNode> {
  return startNode('hub', {
    LOG_LEVEL: 'info',
    NODE_OPTIONS: '--max-old-space-size=1024',
    MERCURE_SUBSCRIPTIONS: 'true',
    MERCURE_CORS_ORIGINS: APP_ORIGIN,
    MERCURE_PUBLISH_ORIGINS: APP_ORIGIN,
  });
}

before(async () => {
  hub = await startHub();
});

after(async () => {
  for (const stream of streams) stream.close();
  await hub?.stop();
});

function subscribe(query: string, token?: string, headers: Record<string, string> = {}): RawRequest {
  return {
    method: 'GET',
    target: `${HUB}?${query}`,
    headers: {
      ...SECURE,
      accept: 'text/event-stream',
      ...(token ? { authorization: `Bearer ${token}` } : {}),
      ...headers,
    },
  };
}

function publish(form: string, token?: string, headers: Record<string, string> = {}): RawRequest {
  return {
    method: 'POST',
    target: HUB,
    headers: {
      ...SECURE,
      'content-type': 'application/x-www-form-urlencoded',
      ...(token ? { authorization: `Bearer ${token}` } : {}),
      ...headers,
    },
    body: form,
  };
}

const topic = (value: string) => `topic=${encodeURIComponent(value)}`;

async function openSubscriber(query: string, token: string): Promise<SseStream> {
  const stream = await SseStream.open(`${hub.origin}${HUB}?${query}`, { authorization: `Bearer ${token}` });
  assert.equal(stream.status, 200, stream.body);
  streams.push(stream);
  return stream;
}

function noSignatureLogged(token: string): void {
  const signature = token.split('.')[2] as string;
  assert.ok(!hub.output().includes(signature), 'the token reached a log line');
}

const rows: AttackRow[] = [
  // Defect 3: selectors are compiled only for authenticated requests, at bounded cost.
  {
    attack: 'defect 3 hostile selectors',
    name: 'no token, 4 KiB matchRegexp of a{1000}',
    request: subscribe(`matchRegexp=${encodeURIComponent(HOSTILE_REGEXP)}`),
    status: 401,
  },
  {
    attack: 'defect 3 hostile selectors',
    name: 'no token, matchURLPattern with a custom regex group',
    request: subscribe(`matchURLPattern=${encodeURIComponent(HOSTILE_URLPATTERN)}`),
    status: 401,
  },
  {
    attack: 'defect 3 hostile selectors',
    name: 'no token, 100 hostile matchers',
    request: subscribe(
      Array.from({ length: 100 }, () => `matchRegexp=${encodeURIComponent('a{1000}'.repeat(8))}`).join('&'),
    ),
    status: 401,
  },
  {
    attack: 'defect 3 hostile selectors',
    name: 'flood of 12 hostile pattern requests without a token: all 401, /healthz stays up',
    setup: async () => {
      const flood = Array.from({ length: 12 }, (_, index) =>
        rawRequest(
          hub.port,
          subscribe(`matchRegexp=${encodeURIComponent(`${HOSTILE_REGEXP.slice(0, 4000)}${index}`)}`),
        ),
      );
      // Liveness during the flood (a generous bound: the issue asks for a responsive node).
      const health = await rawRequest(hub.port, { method: 'GET', target: '/healthz' }, 5000);
      assert.equal(health.status, 200);
      for (const answer of await Promise.all(flood)) assert.equal(answer.status, 401);
    },
    request: { method: 'GET', target: '/readyz' },
    status: 200,
  },
  {
    attack: 'defect 3 hostile selectors',
    name: 'with a token, a 4 KiB matchRegexp past the compile bound is refused',
    request: subscribe(`matchRegexp=${encodeURIComponent(HOSTILE_REGEXP)}`, SUBSCRIBE_ALL),
    status: 400,
  },

  // Defect 4: the subscriptions API checks the claim against the hub's own URL, never one the
  // client chose (absolute-form target, Host header).
  ...[
    { match: 'https://tenant1.example.com/{+path}', matchType: 'URITemplate' },
    { match: 'https://tenant1.example.com/*', matchType: 'URLPattern' },
  ].flatMap((selector) =>
    [
      {
        how: 'absolute-form target',
        target: `https://tenant1.example.com${HUB}/subscriptions`,
        host: {} as Record<string, string>,
      },
      { how: 'Host header', target: `${HUB}/subscriptions`, host: { host: 'tenant1.example.com' } },
    ].map(
      ({ how, target, host }): AttackRow => ({
        attack: 'defect 4 forged Host',
        name: `${how} tenant1.example.com, claim ${selector.matchType} ${selector.match}`,
        setup: async () => {
          await openSubscriber(
            `matchExact=${encodeURIComponent('https://tenant2.example.com/private')}`,
            subscriber([{ match: '*', payload: { secret: 'tenant2-payload' } }]),
          );
        },
        request: {
          method: 'GET',
          target,
          headers: { ...SECURE, ...host, authorization: `Bearer ${subscriber([selector])}` },
        },
        status: [401, 403],
        check: (response) => assert.doesNotMatch(response.body, /tenant2/),
      }),
    ),
  ),

  // Defect 5: tokens in encoded query names never reach a log line.
  ...['%61uthorization', 'access%5Ftoken', 'AUTHORIZATION'].map((name): AttackRow => {
    const token = subscriber([{ match: '*' }], { jti: name });
    return {
      attack: 'defect 5 log redaction',
      name: `?${name}=<jwt>`,
      request: subscribe(`matchExact=a&${name}=${token}`),
      status: [200, 401],
      check: () => noSignatureLogged(token),
    };
  }),

  // Also decide: RFC 6750 / RFC 9728, token matchType, cookie CSRF, control characters.
  {
    attack: 'RFC 6750 challenge',
    name: '401 carries WWW-Authenticate: Bearer error="invalid_token" and resource_metadata',
    request: subscribe('matchExact=a', 'junk'),
    status: 401,
    check: (response) => {
      assertBearerChallenge(response, 'invalid_token');
      assert.match(
        response.headers['www-authenticate'] ?? '',
        /resource_metadata="[^"]*oauth-protected-resource/,
      );
    },
  },
  {
    attack: 'RFC 6750 challenge',
    name: '403 carries WWW-Authenticate: Bearer error="insufficient_scope"',
    request: publish(
      `${topic('https://example.com/b')}&data=x`,
      publisher([{ match: 'https://example.com/a' }]),
    ),
    status: 403,
    check: (response) => assertBearerChallenge(response, 'insufficient_scope'),
  },
  {
    attack: 'RFC 9728 metadata',
    name: 'GET /.well-known/oauth-protected-resource/.well-known/mercure',
    request: {
      method: 'GET',
      target: '/.well-known/oauth-protected-resource/.well-known/mercure',
      headers: SECURE,
    },
    status: 200,
    check: (response) => assert.ok((JSON.parse(response.body) as { resource?: string }).resource),
  },
  {
    attack: 'token matchType',
    name: 'unknown matchType inside a token is a bad token',
    request: subscribe('matchExact=a', subscriber([{ match: 'a', matchType: 'Nope' }])),
    status: 401,
  },
  {
    attack: 'token matchType',
    name: 'unknown matchType as a query parameter stays 501',
    request: subscribe('matchNope=a', SUBSCRIBE_ALL),
    status: 501,
  },
  {
    attack: 'cookie CSRF',
    name: 'cookie publish with Origin: null is refused (no Referer fallback)',
    request: publish(`${topic('https://example.com/a')}&data=x`, undefined, {
      cookie: `mercureAuthorization=${PUBLISH_ALL}`,
      origin: 'null',
      referer: `${APP_ORIGIN}/page`,
    }),
    status: [400, 403],
  },
  {
    attack: 'cookie CSRF',
    name: 'cookie publish from the allowed origin (control)',
    request: publish(`${topic('https://example.com/a')}&data=x`, undefined, {
      cookie: `mercureAuthorization=${PUBLISH_ALL}`,
      origin: APP_ORIGIN,
    }),
    status: 200,
  },
  {
    attack: 'control characters',
    name: 'topic with a control character',
    request: publish(`${topic('https://example.com/a\u0001b')}&data=x`, PUBLISH_ALL),
    status: 400,
  },
  {
    attack: 'control characters',
    name: 'id with a control character',
    request: publish(
      `${topic('https://example.com/a')}&id=${encodeURIComponent('id\u0007x')}&data=x`,
      PUBLISH_ALL,
    ),
    status: 400,
  },
  ...['\u007f', '\u0085', '\u009f'].map(
    (character): AttackRow => ({
      attack: 'control characters',
      name: `topic with U+${character.codePointAt(0)?.toString(16).padStart(4, '0').toUpperCase()}`,
      request: publish(`${topic(`https://example.com/a${character}b`)}&data=x`, PUBLISH_ALL),
      status: 400,
    }),
  ),
  {
    attack: 'control characters',
    name: 'selector with a control character (holds)',
    request: subscribe(`matchExact=${encodeURIComponent('a\u0001b')}`, SUBSCRIBE_ALL),
    status: 400,
  },

  // Token attacks that already hold.
  {
    attack: 'token',
    name: 'valid subscriber token (control)',
    request: subscribe('matchExact=a', SUBSCRIBE_ALL),
    status: 200,
  },
  {
    attack: 'token',
    name: 'alg none',
    request: subscribe('matchExact=a', unsecuredToken({ mercure: { subscribe: [{ match: '*' }] } })),
    status: 401,
  },
  {
    attack: 'token',
    name: 'stripped signature',
    request: subscribe('matchExact=a', stripSignature(SUBSCRIBE_ALL)),
    status: 401,
  },
  {
    attack: 'token',
    name: 'publisher key used for a subscriber token',
    request: subscribe(
      'matchExact=a',
      hmacToken(
        { header: { alg: 'HS256' }, payload: { mercure: { subscribe: [{ match: '*' }] } } },
        PUBLISHER_SECRET,
      ),
    ),
    status: 401,
  },
  {
    attack: 'token',
    name: 'HS/RS confusion: RS256 token signed by an attacker',
    request: subscribe(
      'matchExact=a',
      rsaToken({ header: {}, payload: { mercure: { subscribe: [{ match: '*' }] } } }, attackerKey.privateKey),
    ),
    status: 401,
  },
  ...(['jku', 'x5u'] as const).map(
    (header): AttackRow => ({
      attack: 'token',
      name: `${header} header pointing at the attacker is ignored`,
      request: subscribe(
        'matchExact=a',
        rsaToken(
          {
            header: { [header]: 'https://attacker.example/keys' },
            payload: { mercure: { subscribe: [{ match: '*' }] } },
          },
          attackerKey.privateKey,
        ),
      ),
      status: 401,
    }),
  ),
  {
    attack: 'token',
    name: 'embedded jwk header is ignored',
    request: subscribe(
      'matchExact=a',
      rsaToken(
        {
          header: { jwk: attackerKey.publicKey.export({ format: 'jwk' }) },
          payload: { mercure: { subscribe: [{ match: '*' }] } },
        },
        attackerKey.privateKey,
      ),
    ),
    status: 401,
  },
  {
    attack: 'token',
    name: 'kid flood: 100 unknown kids are all refused and the hub stays up',
    setup: async () => {
      for (let index = 0; index < 100; index += 1) {
        const token = hmacToken(
          {
            header: { alg: 'HS256', kid: `flood-${index}` },
            payload: { mercure: { subscribe: [{ match: '*' }] } },
          },
          'attacker-secret-0123456789abcdef0123',
        );
        assert.equal((await rawRequest(hub.port, subscribe('matchExact=a', token))).status, 401);
      }
    },
    request: { method: 'GET', target: '/healthz' },
    status: 200,
  },
  {
    attack: 'token',
    name: 'expired',
    request: subscribe('matchExact=a', subscriber([{ match: '*' }], { exp: nowSeconds() - 3600 })),
    status: 401,
  },
  {
    attack: 'token',
    name: 'not yet valid (nbf)',
    request: subscribe('matchExact=a', subscriber([{ match: '*' }], { nbf: nowSeconds() + 3600 })),
    status: 401,
  },
  {
    attack: 'token',
    name: 'bare-string claims (Mercure 0.x)',
    request: subscribe('matchExact=a', subscriber(['*'])),
    status: 401,
  },
  { attack: 'token', name: 'no token, anonymous off', request: subscribe('matchExact=a'), status: 401 },
  {
    attack: 'token',
    name: 'token over plain HTTP is refused',
    request: {
      method: 'GET',
      target: `${HUB}?matchExact=a`,
      headers: { authorization: `Bearer ${SUBSCRIBE_ALL}` },
    },
    status: [400, 401, 403],
  },
  {
    // Last: on the old code this subscriber stalls every later publish.
    attack: 'defect 3 hostile selectors',
    name: 'a subscriber with a costly URLPattern group does not stall the node while a 520-character topic is published',
    setup: async () => {
      // Refusing the pattern (a compile bound) is as good as matching it cheaply.
      const stream = await SseStream.open(
        `${hub.origin}${HUB}?matchURLPattern=${encodeURIComponent(HOSTILE_URLPATTERN)}`,
        {
          authorization: `Bearer ${SUBSCRIBE_ALL}`,
        },
      );
      streams.push(stream);
      assert.ok([200, 400].includes(stream.status), `subscribe answered ${stream.status}`);
      const logged = hub.output().length;
      const published = rawRequest(hub.port, publish(`${topic(LONG_TOPIC)}&data=x`, PUBLISH_ALL), 15_000);
      // Liveness while the publish is matched (ce84a74: ~4.5 s of event loop per publish here,
      // 11–12 s in the issue's reproduction); a generous bound, not a benchmark. The health check
      // goes once the hub logged the publish's arrival, not after a guessed delay: what follows is
      // the publish's own handling, and the in-process backend stores and matches it in one step.
      await waitFor(() => /"method":"POST"[^\n]*"msg":"incoming request"/.test(hub.output().slice(logged)), {
        what: 'the hub to log the publish',
      });
      const health = await rawRequest(hub.port, { method: 'GET', target: '/healthz' }, 2000);
      assert.equal(health.status, 200);
      assert.equal((await published).status, 200);
    },
    request: { method: 'GET', target: '/healthz' },
    status: 200,
  },
];

registerCatalogue(
  'hub',
  rows,
  () => hub,
  async () => {
    hub = await startHub();
  },
);

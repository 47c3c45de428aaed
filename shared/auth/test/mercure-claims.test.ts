import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { AuthFailureReason } from '../src/errors.js';
import {
  MAX_SELECTORS_PER_TOKEN,
  type MercureClaims,
  type ParseMercureClaimsOptions,
  parseMercureClaims,
} from '../src/mercure-claims.js';
import { throwsWith } from './support.js';

const HUB = 'https://example.com/.well-known/mercure';
const JWT = { alg: 'HS256', typ: 'JWT' };
const AT_JWT = { alg: 'RS256', typ: 'at+jwt' };
const DETAIL = 'https://mercure.rocks/authorization-detail';

function parse(
  payload: Record<string, unknown>,
  header: Record<string, unknown> = JWT,
  options: ParseMercureClaimsOptions = {},
): MercureClaims {
  return parseMercureClaims(payload, header, { baseUrl: HUB, ...options });
}

function summary(claims: MercureClaims) {
  const entry = (e: MercureClaims['publish'][number]) => [e.selector.matchType, e.selector.match, e.payload];
  return {
    publish: claims.publish.map(entry),
    subscribe: claims.subscribe.map(entry),
    payload: claims.payload,
  };
}

describe('the mercure claim', () => {
  it('reads objects with match, matchType (case-insensitive, default Exact) and payload', () => {
    const claims = parse({
      mercure: {
        publish: [
          { match: 'https://example.com/books/:id', matchType: 'urlpattern' },
          { match: 'https://example.com/announcements' },
        ],
        subscribe: [
          { match: 'https://example.com/users/42', payload: { username: 'alice' } },
          { match: '.*', matchType: 'Regexp', payload: null },
        ],
        payload: { user: 'https://example.com/users/42' },
      },
    });
    assert.equal(claims.grammar, 'mercure');
    assert.deepEqual(summary(claims), {
      publish: [
        ['URLPattern', 'https://example.com/books/:id', undefined],
        ['Exact', 'https://example.com/announcements', undefined],
      ],
      subscribe: [
        ['Exact', 'https://example.com/users/42', { username: 'alice' }],
        ['Regexp', '.*', null],
      ],
      payload: { user: 'https://example.com/users/42' },
    });
  });

  it('absent or null lists are empty', () => {
    assert.deepEqual(summary(parse({ mercure: { publish: null } })), {
      publish: [],
      subscribe: [],
      payload: undefined,
    });
  });

  it('a token with neither grammar grants nothing', () => {
    const claims = parse({ sub: 'x' });
    assert.equal(claims.grammar, 'none');
    assert.deepEqual(summary(claims), { publish: [], subscribe: [], payload: undefined });
  });
});

describe('0.x bare strings', () => {
  const legacyToken = {
    mercure: {
      publish: ['*'],
      subscribe: [
        'https://espace.acme-assurances.example/assures/7/sinistres/{reference}',
        'https://espace.acme-assurances.example/assures/7/messages',
      ],
    },
  };

  it('are refused with 401 outside legacy mode, with a message naming the format', () => {
    const error = throwsWith(() => parse(legacyToken), 'invalid_claims', 401);
    assert.match(error.message, /0\.x/);
  });

  it('one bare string among objects is enough to refuse', () => {
    throwsWith(() => parse({ mercure: { subscribe: [{ match: 'a' }, 'b'] } }), 'invalid_claims', 401);
  });

  it('are URI templates or exact topics in legacy mode', () => {
    const claims = parse(legacyToken, JWT, { legacy: true });
    assert.equal(claims.publish[0]?.selector.isWildcard, true);
    const [template, exact] = claims.subscribe;
    assert.equal(
      template?.selector.matches('https://espace.acme-assurances.example/assures/7/sinistres/S-1'),
      true,
    );
    assert.equal(
      template?.selector.matches('https://espace.acme-assurances.example/assures/8/sinistres/S-1'),
      false,
    );
    assert.equal(exact?.selector.matches('https://espace.acme-assurances.example/assures/7/messages'), true);
  });

  it('legacy mode still reads object entries', () => {
    const claims = parse(
      { mercure: { subscribe: ['a', { match: '/b/:id', matchType: 'URLPattern' }] } },
      JWT,
      {
        legacy: true,
      },
    );
    assert.deepEqual(
      claims.subscribe.map((entry) => entry.selector.matchType),
      ['Exact', 'URLPattern'],
    );
  });
});

describe('malformed mercure claims', () => {
  // [name, payload, reason, status]
  // biome-ignore format: a table, one case per line
  const cases: readonly (readonly [string, Record<string, unknown>, AuthFailureReason, number])[] = [
    ['mercure is a string', { mercure: 'all' }, 'invalid_claims', 401],
    ['mercure is null', { mercure: null }, 'invalid_claims', 401],
    ['publish is an object', { mercure: { publish: { match: '*' } } }, 'invalid_claims', 401],
    ['entry without match', { mercure: { subscribe: [{ matchType: 'Exact' }] } }, 'invalid_claims', 401],
    ['match is a number', { mercure: { subscribe: [{ match: 42 }] } }, 'invalid_claims', 401],
    ['matchType is a number', { mercure: { subscribe: [{ match: 'a', matchType: 1 }] } }, 'invalid_claims', 401],
    ['entry is null', { mercure: { publish: [null] } }, 'invalid_claims', 401],
    ['empty match', { mercure: { publish: [{ match: '' }] } }, 'invalid_claims', 401],
    [
      'pattern that does not compile (401 for a token, not 400)',
      { mercure: { subscribe: [{ match: '(a', matchType: 'Regexp' }] } },
      'invalid_claims',
      401,
    ],
    // Issue #8: an unknown matchType in a token is a bad token (401), as in authorization_details;
    // the 501 belongs to the subscribe query parameter only.
    ['unknown matchType in subscribe', { mercure: { subscribe: [{ match: 'a', matchType: 'CEL' }] } }, 'invalid_claims', 401],
    ['unknown matchType in publish', { mercure: { publish: [{ match: 'a', matchType: 'Glob' }] } }, 'invalid_claims', 401],
    ['unknown matchType after valid entries', { mercure: { subscribe: [{ match: 'a' }, { match: 'b', matchType: 'regex' }] } }, 'invalid_claims', 401],
    ['matchType spelled as a query suffix', { mercure: { subscribe: [{ match: 'a', matchType: 'matchExact' }] } }, 'invalid_claims', 401],
    [
      'too many selectors',
      { mercure: { subscribe: Array.from({ length: MAX_SELECTORS_PER_TOKEN + 1 }, (_, i) => ({ match: `t${i}` })) } },
      'invalid_claims',
      401,
    ],
  ];
  for (const [name, payload, reason, status] of cases) {
    it(`${name} → ${status} ${reason}`, () => {
      throwsWith(() => parse(payload), reason, status);
    });
  }
});

describe('matchType in a token', () => {
  // The wildcard is resolved before the type (Mercure draft), so `*` grants everything even
  // under a type the hub does not know; any other pattern under such a type is a bad token.
  it('`*` with an unknown matchType is still the wildcard', () => {
    const claims = parse({ mercure: { subscribe: [{ match: '*', matchType: 'CEL' }] } });
    assert.equal(claims.subscribe[0]?.selector.isWildcard, true);
  });

  // [matchType, accepted]
  // biome-ignore format: a table, one case per line
  const types: readonly (readonly [string | null, boolean])[] = [
    [null, true], ['', true], ['exact', true], ['URLPATTERN', true], ['regexp', true], ['UriTemplate', true],
    ['CEL', false], ['glob', false], ['matchExact', false], ['Exact ', false], ['url-pattern', false],
  ];
  for (const [matchType, accepted] of types) {
    it(`matchType ${JSON.stringify(matchType)} → ${accepted ? 'accepted' : '401 invalid_claims'}`, () => {
      const payload = { mercure: { subscribe: [{ match: '/books/1', matchType }] } };
      if (accepted) assert.equal(parse(payload).subscribe.length, 1);
      else throwsWith(() => parse(payload), 'invalid_claims', 401);
    });
  }
});

describe('Mercure 1.0 authorization_details', () => {
  it('reads actions, topics (match_type exact/urlpattern) and per-detail payloads', () => {
    const claims = parse(
      {
        authorization_details: [
          { type: 'openid_credential', format: 'whatever', topics: 'not ours' },
          {
            type: DETAIL,
            actions: ['subscribe'],
            topics: [{ match: 'https://example.com/books/:id', match_type: 'urlpattern' }],
            payload: { user: 42 },
          },
          {
            type: 'mercure',
            actions: ['publish', 'subscribe'],
            topics: [{ match: 'https://example.com/feed' }],
          },
          { type: DETAIL, actions: ['publish'], topics: [{ match: '/x/:id', matchType: 'URLPattern' }] },
        ],
      },
      AT_JWT,
    );
    assert.equal(claims.grammar, 'authorization_details');
    assert.deepEqual(summary(claims), {
      publish: [
        ['Exact', 'https://example.com/feed', undefined],
        ['URLPattern', '/x/:id', undefined],
      ],
      subscribe: [
        ['URLPattern', 'https://example.com/books/:id', { user: 42 }],
        ['Exact', 'https://example.com/feed', undefined],
      ],
      payload: undefined,
    });
  });

  it('accepts typ application/at+jwt', () => {
    const payload = {
      authorization_details: [{ type: DETAIL, actions: ['subscribe'], topics: [{ match: '*' }] }],
    };
    assert.equal(parse(payload, { alg: 'RS256', typ: 'application/at+jwt' }).subscribe.length, 1);
  });

  it('details of other types alone leave the mercure claim in charge (not ambiguous)', () => {
    const claims = parse({
      mercure: { subscribe: [{ match: 'a' }] },
      authorization_details: [{ type: 'payment_initiation', actions: ['initiate'] }],
    });
    assert.equal(claims.grammar, 'mercure');
  });

  const detail = (fields: Record<string, unknown>) => ({
    authorization_details: [{ type: DETAIL, actions: ['subscribe'], topics: [{ match: 'a' }], ...fields }],
  });
  // [name, payload, header, reason]
  // biome-ignore format: a table, one case per line
  const invalid: readonly (readonly [string, Record<string, unknown>, Record<string, unknown>, AuthFailureReason])[] = [
    [
      'both grammars in one token',
      { mercure: { subscribe: [{ match: 'a' }] }, ...detail({}) },
      AT_JWT,
      'ambiguous_claims',
    ],
    ['typ missing', detail({}), { alg: 'RS256' }, 'invalid_claims'],
    ['typ JWT', detail({}), JWT, 'invalid_claims'],
    ['bare-string topic', detail({ topics: ['a'] }), AT_JWT, 'invalid_claims'],
    ['topic without match', detail({ topics: [{ match_type: 'exact' }] }), AT_JWT, 'invalid_claims'],
    ['empty match', detail({ topics: [{ match: '' }] }), AT_JWT, 'invalid_claims'],
    ['no topics', detail({ topics: [] }), AT_JWT, 'invalid_claims'],
    ['no actions', detail({ actions: [] }), AT_JWT, 'invalid_claims'],
    ['unknown action', detail({ actions: ['subscribe', 'delete'] }), AT_JWT, 'invalid_claims'],
    ['match_type outside exact/urlpattern', detail({ topics: [{ match: 'a', match_type: 'regexp' }] }), AT_JWT, 'invalid_claims'],
    [
      'conflicting match_type spellings',
      detail({ topics: [{ match: 'a', match_type: 'exact', matchType: 'URLPattern' }] }),
      AT_JWT,
      'invalid_claims',
    ],
    ['URL pattern that does not compile', detail({ topics: [{ match: '/:id(', match_type: 'urlpattern' }] }), AT_JWT, 'invalid_claims'],
    ['authorization_details not an array', { authorization_details: { type: DETAIL } }, AT_JWT, 'invalid_claims'],
    ['a detail that is not an object', { authorization_details: ['mercure'] }, AT_JWT, 'invalid_claims'],
  ];
  for (const [name, payload, header, reason] of invalid) {
    it(`${name} → 401 ${reason}`, () => {
      throwsWith(() => parse(payload, header), reason, 401);
    });
  }
});

import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { canPublish, canReceive, selectPayload } from '../src/mercure-access.js';
import { type MercureClaims, parseMercureClaims } from '../src/mercure-claims.js';

const HUB = 'https://example.com/.well-known/mercure';

function claims(mercure: Record<string, unknown>): MercureClaims {
  return parseMercureClaims({ mercure }, { alg: 'HS256' }, { baseUrl: HUB });
}

describe('publishers', () => {
  const seedPublisher = claims({
    publish: [
      { match: 'https://example.com/books/:id', matchType: 'URLPattern' },
      { match: 'https://example.com/announcements' },
    ],
  });
  // [name, claims, topics (canonical first), allowed]
  // biome-ignore format: a table, one case per line
  const cases: readonly (readonly [string, MercureClaims | undefined, readonly string[], boolean])[] = [
    ['matching topic', seedPublisher, ['https://example.com/books/1'], true],
    ['canonical and alternates all match', seedPublisher, ['https://example.com/books/1', 'https://example.com/announcements'], true],
    ['one alternate does not match: whole publication refused', seedPublisher, ['https://example.com/books/1', 'https://example.com/users/1'], false],
    ['no entry matches', seedPublisher, ['https://example.com/authors/1'], false],
    ['empty publish array', claims({ publish: [] }), ['https://example.com/books/1'], false],
    ['missing publish', claims({ subscribe: [{ match: '*' }] }), ['https://example.com/books/1'], false],
    ['no claims (anonymous)', undefined, ['https://example.com/books/1'], false],
    ['`*` allows every topic', claims({ publish: [{ match: '*' }] }), ['urn:a', 'https://x.example/y'], true],
    ['`*` with any matchType', claims({ publish: [{ match: '*', matchType: 'URLPattern' }] }), ['urn:a'], true],
    [
      'a permissive URL pattern is not `*`',
      claims({ publish: [{ match: 'https://*/*', matchType: 'URLPattern' }] }),
      ['urn:uuid:1'],
      false,
    ],
    ['no topics at all', seedPublisher, [], false],
  ];
  for (const [name, subject, topics, allowed] of cases) {
    it(`${name} → ${allowed ? 'allowed' : 'refused'}`, () => {
      assert.equal(canPublish(subject, topics), allowed);
    });
  }
});

describe('subscribers (private updates)', () => {
  const seedSubscriber = claims({
    subscribe: [
      { match: 'https://example.com/users/42/:resource', matchType: 'URLPattern' },
      { match: 'https://example.com/announcements' },
    ],
  });
  const user42 = claims({
    subscribe: [{ match: 'https://example.com/users/42/?topic=:topic', matchType: 'URLPattern' }],
  });
  const user7 = claims({
    subscribe: [{ match: 'https://example.com/users/7/?topic=:topic', matchType: 'URLPattern' }],
  });
  // The Mercure spec's example of per-user alternate topics for book 1: users 42 and 99 may see it.
  const book1 = [
    'https://example.com/books/1',
    'https://example.com/users/42/?topic=https%3A%2F%2Fexample.com%2Fbooks%2F1',
    'https://example.com/users/99/?topic=https%3A%2F%2Fexample.com%2Fbooks%2F1',
  ];
  // [name, claims, update topics, delivered]
  // biome-ignore format: a table, one case per line
  const cases: readonly (readonly [string, MercureClaims | undefined, readonly string[], boolean])[] = [
    ['canonical topic matches', seedSubscriber, ['https://example.com/users/42/notifications'], true],
    ['only an alternate matches', seedSubscriber, ['https://example.com/x', 'https://example.com/announcements'], true],
    ['nothing matches: dropped', seedSubscriber, ['https://example.com/users/43/notifications'], false],
    ['per-user alternate: user 42 receives book 1', user42, book1, true],
    ['per-user alternate: user 7 does not', user7, book1, false],
    ['empty subscribe: no private updates', claims({ subscribe: [] }), ['https://example.com/announcements'], false],
    ['anonymous: no private updates', undefined, ['https://example.com/announcements'], false],
    ['`*` receives everything', claims({ subscribe: [{ match: '*' }] }), ['urn:anything'], true],
  ];
  for (const [name, subject, topics, delivered] of cases) {
    it(`${name} → ${delivered ? 'delivered' : 'not delivered'}`, () => {
      assert.equal(canReceive(subject, topics), delivered);
    });
  }
});

describe('payload selection', () => {
  const seed = claims({
    subscribe: [
      { match: 'https://example.com/users/42', payload: { username: 'alice', ip: '10.0.0.1' } },
      { match: 'https://example.com/books/:id', matchType: 'URLPattern', payload: { username: 'alice' } },
      { match: '.*', matchType: 'Regexp', payload: { rule: 'catch-all' } },
    ],
    payload: { fallback: true },
  });
  // `\d+` applied to the text "\d+" does not match: only rule 2 can select this entry.
  const digits = claims({
    subscribe: [{ match: '\\d+', matchType: 'Regexp', payload: 'digits' }],
    payload: 'fallback',
  });
  const ordered = claims({
    subscribe: [
      { match: 'https://example.com/books/{id}', matchType: 'URITemplate', payload: 'template' },
      { match: '*', payload: 'wildcard' },
    ],
    payload: 'top',
  });
  // [name, claims, subscription, expected payload]
  // biome-ignore format: a table, one case per line
  const cases: readonly (readonly [string, MercureClaims, { match: string; matchType?: string }, unknown])[] = [
    ['rule 2: same type, identical pattern', seed, { match: 'https://example.com/books/:id', matchType: 'urlpattern' }, { username: 'alice' }],
    ['rule 2 where rule 3 would not match', digits, { match: '\\d+', matchType: 'regexp' }, 'digits'],
    ['rule 2 needs the same type', digits, { match: '\\d+', matchType: 'Exact' }, 'fallback'],
    ['rule 3: claim matcher applied to the subscription value', seed, { match: 'https://example.com/books/7' }, { username: 'alice' }],
    ['rule 3 on an exact entry', seed, { match: 'https://example.com/users/42' }, { username: 'alice', ip: '10.0.0.1' }],
    ['first matching entry wins (the Regexp catch-all comes later)', seed, { match: 'https://example.com/books/7' }, { username: 'alice' }],
    ['a later catch-all matches what earlier entries do not', seed, { match: 'https://example.com/authors/1' }, { rule: 'catch-all' }],
    ['rule 1: `*` matches, but an earlier entry wins', ordered, { match: 'https://example.com/books/1' }, 'template'],
    ['rule 1: `*` matches what nothing before it does', ordered, { match: 'https://example.com/news' }, 'wildcard'],
    [
      'no entry matches: fallback mercure.payload',
      claims({ subscribe: [{ match: 'a', payload: 1 }], payload: 'fallback' }),
      { match: 'b' },
      'fallback',
    ],
    [
      'the winning entry has no payload: fallback mercure.payload',
      claims({ subscribe: [{ match: 'a' }, { match: '*', payload: 'later' }], payload: 'fallback' }),
      { match: 'a' },
      'fallback',
    ],
    ['nothing at all: undefined', claims({ subscribe: [{ match: 'a', payload: 1 }] }), { match: 'b' }, undefined],
    [
      'a null payload is a payload',
      claims({ subscribe: [{ match: 'a', payload: null }], payload: 'fallback' }),
      { match: 'a' },
      null,
    ],
  ];
  for (const [name, subject, subscription, expected] of cases) {
    it(name, () => {
      assert.deepEqual(selectPayload(subject, subscription), expected);
    });
  }
});

import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { URLPattern } from 'urlpattern-polyfill/urlpattern';
import { countEngineReads } from '../src/matchers-re2.js';
import { compileUrlPattern, UrlPatternSyntaxError } from '../src/matchers-url-pattern.js';

const BASE = 'https://hub.example.com/.well-known/mercure';

/**
 * Differential cases: our RE2 evaluation must agree with the polyfill's own `test()` wherever
 * the polyfill is fast enough to ask. [pattern, topic].
 */
// biome-ignore format: a table, one case per line
const CASES: readonly (readonly [string, string])[] = [
  ['https://example.com/books/:id', 'https://example.com/books/1'],
  ['https://example.com/books/:id', 'https://example.com/books/1/chapters'],
  ['https://example.com/books/:id', 'https://example.com/books/'],
  ['https://example.com/books/:id', 'http://example.com/books/1'],
  ['https://example.com/books/:id', 'https://EXAMPLE.com/books/1'],
  ['https://example.com/books/:id', 'https://example.com:443/books/1'],
  ['https://example.com/books/:id', 'https://example.com/Books/1'],
  ['https://example.com/books/:id?', 'https://example.com/books'],
  ['https://example.com/books/:id?', 'https://example.com/books/7'],
  ['https://example.com/books/:id+', 'https://example.com/books/1/2/3'],
  ['https://example.com/books/:id*', 'https://example.com/books'],
  ['https://example.com/books/:id*', 'https://example.com/books/1/2'],
  ['https://example.com/books/*', 'https://example.com/books/a/b/c?x=1#y'],
  ['https://example.com/*', 'https://example.com/'],
  ['https://example.com/*', 'https://example.org/'],
  ['https://example.com/books/:id(\\d+)', 'https://example.com/books/42'],
  ['https://example.com/books/:id(\\d+)', 'https://example.com/books/4x2'],
  ['https://example.com/books{/:id}?', 'https://example.com/books'],
  ['https://example.com/books{/:id}?', 'https://example.com/books/3'],
  ['https://example.com/{books/}?:id', 'https://example.com/books/9'],
  ['https://example.com/{books/}?:id', 'https://example.com/9'],
  ['https://example.com/:a-:b', 'https://example.com/x-y'],
  ['https://example.com/:a.:ext', 'https://example.com/file.tar.gz'],
  ['https://example.com/users/42/?topic=:topic', 'https://example.com/users/42/?topic=https%3A%2F%2Fexample.com%2Fbooks%2F1'],
  ['https://example.com/users/42/?topic=:topic', 'https://example.com/users/99/?topic=https%3A%2F%2Fexample.com%2Fbooks%2F1'],
  ['https://example.com/users/42/?topic=:topic', 'https://example.com/users/42/?topic=a&other=b'],
  ['https://example.com/users/42/?topic=*', 'https://example.com/users/42/?topic=a&other=b'],
  ['https://example.com/users/:user/:resource', 'https://example.com/users/42/notifications'],
  ['https://example.com/page#:section', 'https://example.com/page#intro'],
  ['https://example.com/page#:section', 'https://example.com/page'],
  ['https://*.example.com/feed', 'https://api.example.com/feed'],
  ['https://*.example.com/feed', 'https://example.com/feed'],
  ['https://:sub.example.com/feed', 'https://a.b.example.com/feed'],
  ['https://example.com:8443/x', 'https://example.com:8443/x'],
  ['https://example.com:8443/x', 'https://example.com/x'],
  ['https://user:pass@example.com/x', 'https://user:pass@example.com/x'],
  ['https://example.com/caf%C3%A9', 'https://example.com/café'],
  ['https://example.com/café', 'https://example.com/caf%C3%A9'],
  ['https://example.com/a b', 'https://example.com/a%20b'],
  ['/books/:id', '/books/1'],
  ['/books/:id', 'https://hub.example.com/books/1'],
  ['/books/:id', 'https://other.example.com/books/1'],
  ['/.well-known/mercure/subscriptions/:type/:topic/:subscriber', '/.well-known/mercure/subscriptions/Exact/https%3A%2F%2Fexample.com%2Ffoo/urn%3Auuid%3A1'],
  ['books/:id', 'books/1'],
  ['urn\\:uuid\\:*', 'urn:uuid:0192c1f1-1b5e-7000-8000-000000000000'],
  ['urn\\:uuid\\:*', 'urn:isbn:123'],
  ['data\\:*', 'data:text/plain,hello'],
  ['mailto\\:*@example.com', 'mailto:alice@example.com'],
  ['foo\\://bar/:x', 'foo://bar/y'],
  ['https://[\\:\\:1]/x', 'https://[::1]/x'],
  ['http{s}?://example.com/x', 'http://example.com/x'],
  ['http{s}?://example.com/x', 'https://example.com/x'],
  ['https://example.com/x', 'not a url at all'],
  ['https://example.com/:id', 'https://example.com/%zz'],
  ['https://example.com/\\*', 'https://example.com/*'],
  ['https://example.com/\\*', 'https://example.com/a'],
];

describe('URLPattern matching agrees with the polyfill', () => {
  for (const [pattern, topic] of CASES) {
    it(`${pattern} ~ ${topic}`, () => {
      const expected = new URLPattern(pattern, BASE).test(topic, BASE);
      assert.equal(compileUrlPattern(pattern, BASE).test(topic), expected);
    });
  }

  it('covers both outcomes (the table is not trivially all-true or all-false)', () => {
    const outcomes = new Set(
      CASES.map(([pattern, topic]) => new URLPattern(pattern, BASE).test(topic, BASE)),
    );
    assert.deepEqual(outcomes, new Set([true, false]));
  });
});

describe('URLPattern compile errors', () => {
  // biome-ignore format: a table, one case per line
  const invalid: readonly (readonly [string, string])[] = [
    ['unbalanced group', 'https://example.com/:id(\\d+'],
    ['capturing group inside a regexp', 'https://example.com/:id((a)b)'],
    ['duplicate name', 'https://example.com/:id/:id'],
    ['backreference RE2 cannot run', 'https://example.com/:id(a\\1)'],
    ['lookahead RE2 cannot run', 'https://example.com/:id((?=a)a)'],
    ['relative pattern that cannot resolve', 'https://example.com:99999/'],
  ];
  for (const [name, pattern] of invalid) {
    it(`refuses ${name}`, () => {
      assert.throws(() => compileUrlPattern(pattern, BASE), UrlPatternSyntaxError);
    });
  }
});

/**
 * Linear time, checked by counting the engine's work rather than timing it (a time bound flakes
 * on a loaded machine): `countEngineReads` (matchers-re2.ts) counts every character the
 * component programs read. RE2 reads each character once per pass (lazy DFA, then the NFA if
 * the DFA gives up), so a topic of n characters costs at most READS_PER_CHARACTER × n reads, plus
 * a few at the ends of each component; the polyfill's backtracking RegExp (~4 s for the first
 * case at 80 characters, measured) re-reads the path once per way of splitting it between the
 * wildcards, so a backtracking engine passes the bound at the first size and the count stops it
 * there (the limit throws). No path here can be rejected before its last character, so a
 * matcher that reads fewer than n characters is not the counted engine and proves nothing:
 * that fails too.
 */
const READS_PER_CHARACTER = 2;
const READS_AT_THE_ENDS = 8;
const readBound = (length: number) => READS_PER_CHARACTER * length + READS_AT_THE_ENDS;

describe('URLPattern matching is linear time (counted in character reads)', () => {
  // biome-ignore format: a table, one case per line
  const pathological: readonly (readonly [string, string])[] = [
    ['https://example.com/*a*a*a*a*a*a*a*a*b', 'a'],
    ['https://example.com/:a-:b-:c-:d-:e-:f-:g-x', '-'],
    ['https://example.com/:id((?:a|aa)+b)', 'a'],
  ];
  for (const [pattern, filler] of pathological) {
    it(`${pattern}: reads stay within ${READS_PER_CHARACTER}n + ${READS_AT_THE_ENDS}, n = 16 … 65,536`, () => {
      const { test } = compileUrlPattern(pattern, BASE);
      let previous: number | undefined;
      for (let length = 16; length <= 65_536; length *= 2) {
        const topic = `https://example.com/${filler.repeat(length)}`;
        const { result, reads } = countEngineReads(() => test(topic), readBound(length));
        assert.equal(result, false);
        assert.ok(reads >= length, `${reads} reads of ${length} characters: not the counted engine`);
        // Doubling the path at most doubles the work (plus the constant at the ends).
        if (previous !== undefined) {
          assert.ok(reads <= 2 * previous + READS_AT_THE_ENDS, `${previous} then ${reads} reads`);
        }
        previous = reads;
      }
    });
  }
});

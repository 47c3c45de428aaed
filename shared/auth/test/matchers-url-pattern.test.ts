import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { URLPattern } from 'urlpattern-polyfill/urlpattern';
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

describe('URLPattern matching is linear time', () => {
  // The polyfill takes ~4 s on an 80-character topic for the first pattern (measured).
  // biome-ignore format: a table, one case per line
  const pathological: readonly (readonly [string, string])[] = [
    ['https://example.com/*a*a*a*a*a*a*a*a*b', `https://example.com/${'a'.repeat(20_000)}`],
    ['https://example.com/:a-:b-:c-:d-:e-:f-:g-x', `https://example.com/${'-'.repeat(20_000)}`],
    ['https://example.com/:id((?:a|aa)+b)', `https://example.com/${'a'.repeat(20_000)}`],
  ];
  for (const [pattern, topic] of pathological) {
    it(`${pattern} against a ${topic.length}-character topic finishes fast`, () => {
      const { test } = compileUrlPattern(pattern, BASE);
      const started = performance.now();
      assert.equal(test(topic), false);
      assert.ok(performance.now() - started < 1000, 'took more than a second');
    });
  }
});

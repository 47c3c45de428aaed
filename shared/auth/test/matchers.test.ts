import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import {
  compileLegacySelector,
  compileTopicSelector,
  MAX_PATTERN_BYTES,
  resolveMatcherType,
} from '../src/matchers.js';
import { throwsWith } from './support.js';

const HUB = 'https://example.com/.well-known/mercure';

// [matchType as written, pattern, topic, expected]
// biome-ignore format: a table, one case per line
const SEMANTICS: readonly (readonly [string | undefined, string, string, boolean])[] = [
  // Exact: byte-for-byte, case-sensitive, no normalisation; the default type.
  [undefined, 'https://example.com/books/1', 'https://example.com/books/1', true],
  [undefined, 'https://example.com/books/1', 'https://example.com/books/1/', false],
  ['Exact', 'https://example.com/books/1', 'https://example.com/Books/1', false],
  ['exact', 'https://example.com/caf%C3%A9', 'https://example.com/café', false],
  ['Exact', '/books/1', 'https://example.com/books/1', false],
  // `*` is the wildcard for every type.
  [undefined, '*', 'https://anything.example/x', true],
  ['URLPattern', '*', 'urn:uuid:1', true],
  ['Regexp', '*', 'x', true],
  ['URITemplate', '*', 'x', true],
  // A permissive URL pattern is not the wildcard: it only matches URLs it describes.
  ['URLPattern', 'https://example.com/*', 'https://example.org/x', false],
  // URLPattern, case-insensitive type name, relative patterns against the hub URL.
  ['URLPattern', 'https://example.com/books/:id', 'https://example.com/books/42', true],
  ['urlpattern', 'https://example.com/books/:id', 'https://example.com/books/42/reviews', false],
  ['URLPATTERN', '/books/:id', 'https://example.com/books/42', true],
  ['URLPattern', '/books/:id', 'https://other.example/books/42', false],
  // The Mercure spec's example of a per-user alternate topic.
  [
    'URLPattern',
    'https://example.com/users/42/?topic=:topic',
    'https://example.com/users/42/?topic=https%3A%2F%2Fexample.com%2Fbooks%2F1',
    true,
  ],
  [
    'URLPattern',
    'https://example.com/users/42/?topic=:topic',
    'https://example.com/users/99/?topic=https%3A%2F%2Fexample.com%2Fbooks%2F1',
    false,
  ],
  ['URLPattern', 'https://example.com/users/42/?topic=:topic', 'https://example.com/books/1', false],
  // Regexp: RE2, the whole topic must match (decision in matchers-regexp.ts).
  ['Regexp', 'https://example\\.com/books/\\d+', 'https://example.com/books/12', true],
  ['Regexp', 'https://example\\.com/books/\\d+', 'https://example.com/books/12/x', false],
  ['Regexp', 'books/\\d+', 'https://example.com/books/12', false],
  ['regexp', '.*', 'https://example.com/anything', true],
  ['REGEXP', 'a|b', 'ab', false],
  ['Regexp', 'a|b', 'b', true],
  ['Regexp', 'price\\$', 'price$', true],
  // URITemplate: RFC 6570 with the reference hub's regexp semantics.
  ['URITemplate', 'https://example.com/books/{id}', 'https://example.com/books/1', true],
  ['uritemplate', 'https://example.com/books/{id}', 'https://example.com/books/1/2', false],
  ['URITemplate', 'https://example.com/{firstname}/{lastname}', 'https://example.com/kevin/dunglas', true],
  ['URITemplate', 'https://example.com/users/foo/{?topic}', 'https://example.com/users/foo/?topic=bar', true],
  ['URITemplate', 'https://example.com/foo/bar', 'https://example.com/foo/bar', true],
  ['URITemplate', 'https://example.com/files/{+path}', 'https://example.com/files/a/b/c.txt', true],
  ['URITemplate', 'https://example.com/books/{id}', 'https://example.com/books/a:b', false],
];

describe('topic selector semantics', () => {
  for (const [matchType, pattern, topic, expected] of SEMANTICS) {
    it(`${matchType ?? '(absent)'} ${pattern} ${expected ? 'matches' : 'does not match'} ${topic}`, () => {
      const selector = compileTopicSelector(pattern, matchType, { baseUrl: HUB });
      assert.equal(selector.matches(topic), expected);
    });
  }
});

describe('matcher types', () => {
  // [as written, canonical or undefined]
  // biome-ignore format: a table, one case per line
  const types: readonly (readonly [string | null | undefined, string | undefined])[] = [
    [undefined, 'Exact'],
    [null, 'Exact'],
    ['', 'Exact'],
    ['EXACT', 'Exact'],
    ['urlPattern', 'URLPattern'],
    ['ReGeXp', 'Regexp'],
    ['uriTemplate', 'URITemplate'],
    ['CEL', undefined],
    ['glob', undefined],
  ];
  for (const [written, canonical] of types) {
    it(`${String(written)} resolves to ${String(canonical)}`, () => {
      assert.equal(resolveMatcherType(written), canonical);
    });
  }

  it('reports the canonical type on the compiled selector', () => {
    assert.equal(compileTopicSelector('/a/:b', 'urlpattern', { baseUrl: HUB }).matchType, 'URLPattern');
  });

  it('an unsupported type is 501 unsupported_matcher', () => {
    throwsWith(() => compileTopicSelector('https://example.com/x', 'Glob'), 'unsupported_matcher', 501);
  });

  it('`*` is the wildcard even with an unsupported type (resolved before the type)', () => {
    const selector = compileTopicSelector('*', 'Glob');
    assert.equal(selector.isWildcard, true);
    assert.equal(selector.matches('anything'), true);
  });
});

describe('invalid patterns are 400 invalid_pattern with a generic message', () => {
  // biome-ignore format: a table, one case per line
  const invalid: readonly (readonly [string, string, string])[] = [
    ['Regexp with a backreference', 'Regexp', '(a)\\1'],
    ['Regexp with lookahead', 'Regexp', '(?=a)a'],
    ['Regexp that does not parse', 'Regexp', '(unclosed'],
    ['Regexp with an explicit ^ anchor', 'Regexp', '^https://example.com/.*'],
    ['Regexp with an explicit $ anchor', 'Regexp', 'https://example.com/.*$'],
    ['URLPattern that does not parse', 'URLPattern', 'https://example.com/:id(\\d+'],
    ['URITemplate with an unclosed expression', 'URITemplate', 'https://example.com/{id'],
    ['URITemplate with a reserved operator', 'URITemplate', 'https://example.com/{=id}'],
    ['empty Exact pattern', 'Exact', ''],
    ['control character', 'Exact', 'https://example.com/a\u0000b'],
    ['C1 control character', 'URLPattern', 'https://example.com/a\u0085'],
    ['pattern longer than the bound', 'Exact', `https://example.com/${'a'.repeat(MAX_PATTERN_BYTES)}`],
  ];
  for (const [name, type, pattern] of invalid) {
    it(name, () => {
      const error = throwsWith(
        () => compileTopicSelector(pattern, type, { baseUrl: HUB }),
        'invalid_pattern',
        400,
      );
      assert.equal(error.message, 'Invalid topic matcher pattern');
    });
  }
});

describe('compiled selectors are cached', () => {
  it('returns the same selector for the same type, base and pattern', () => {
    const first = compileTopicSelector('https://example.com/x/:id', 'URLPattern', { baseUrl: HUB });
    assert.equal(compileTopicSelector('https://example.com/x/:id', 'urlpattern', { baseUrl: HUB }), first);
  });

  it('keys URL patterns by base URL (relative patterns resolve differently)', () => {
    const a = compileTopicSelector('/x/:id', 'URLPattern', { baseUrl: 'https://a.example/' });
    const b = compileTopicSelector('/x/:id', 'URLPattern', { baseUrl: 'https://b.example/' });
    assert.notEqual(a, b);
    assert.equal(a.matches('https://a.example/x/1'), true);
    assert.equal(b.matches('https://a.example/x/1'), false);
  });
});

describe('legacy (0.x) selectors', () => {
  // [selector, topic, expected]
  // biome-ignore format: a table, one case per line
  const cases: readonly (readonly [string, string, boolean])[] = [
    ['*', 'https://example.com/anything', true],
    ['https://example.com/books/1', 'https://example.com/books/1', true],
    ['https://example.com/books/1', 'https://example.com/books/2', false],
    [
      'https://espace.acme-assurances.example/assures/7/sinistres/{reference}',
      'https://espace.acme-assurances.example/assures/7/sinistres/S-2024-001',
      true,
    ],
    [
      'https://espace.acme-assurances.example/assures/7/sinistres/{reference}',
      'https://espace.acme-assurances.example/assures/8/sinistres/S-2024-001',
      false,
    ],
    // A template also matches itself literally (0.x compared exactly first).
    ['https://example.com/books/{id}', 'https://example.com/books/{id}', true],
    // Not a valid template: an exact topic.
    ['https://example.com/{unclosed', 'https://example.com/{unclosed', true],
    ['https://example.com/{unclosed', 'https://example.com/x', false],
  ];
  for (const [selector, topic, expected] of cases) {
    it(`${selector} ${expected ? 'matches' : 'does not match'} ${topic}`, () => {
      assert.equal(compileLegacySelector(selector).matches(topic), expected);
    });
  }
});

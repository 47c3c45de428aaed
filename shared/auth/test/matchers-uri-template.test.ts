import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { compileUriTemplate, UriTemplateSyntaxError } from '../src/matchers-uri-template.js';

// [template, topic, expected]: RFC 6570 operators, as the reference hub's regexp matches them.
// biome-ignore format: a table, one case per line
const CASES: readonly (readonly [string, string, boolean])[] = [
  ['https://example.com/{id}', 'https://example.com/1', true],
  ['https://example.com/{id}', 'https://example.com/', true], // undefined variable expands to ""
  ['https://example.com/{id}', 'https://example.com/a/b', false], // no "/" in a simple value
  ['https://example.com/{id}', 'https://example.com/a%2Fb', true], // escapes are fine
  ['https://example.com/{id}', 'https://example.com/a%zz', false], // a malformed escape is not
  ['https://example.com/{x,y}', 'https://example.com/1,2', true],
  ['https://example.com/{x,y}', 'https://example.com/1,2,3', true], // U class includes ","
  ['https://example.com/{+path}', 'https://example.com/a/b?c#d', true],
  ['https://example.com/page{#section}', 'https://example.com/page#intro', true],
  ['https://example.com/page{#section}', 'https://example.com/page', true],
  ['https://example.com/files{.ext}', 'https://example.com/files.json', true],
  ['https://example.com/api{/version}/users', 'https://example.com/api/v1/users', true],
  ['https://example.com/api{/version}/users', 'https://example.com/api/users', true],
  ['https://example.com/list{/segments*}', 'https://example.com/list/a/b/c', true],
  ['https://example.com/api{;version}', 'https://example.com/api;version=v1', true],
  ['https://example.com/search{?q,limit}', 'https://example.com/search?q=test&limit=10', true],
  ['https://example.com/search{?q,limit}', 'https://example.com/search?q=a&limit=1&x=2', false],
  ['https://example.com/search{?filters*}', 'https://example.com/search?a=1&b=2&c=3', true],
  ['https://example.com/search?type=user{&q}', 'https://example.com/search?type=user&q=john', true],
  ['https://example.com/{name:3}', 'https://example.com/toolong', true], // prefix length not enforced
  ['https://example.com/books/{id}', 'https://example.com/books/1?x', false],
  ['urn:uuid:{id}', 'urn:uuid:0192c1f1-1b5e-7000-8000-000000000000', true],
  ['https://example.com/caf%C3%A9/{x}', 'https://example.com/caf%C3%A9/1', true],
  ['https://example.com/café/{x}', 'https://example.com/café/1', true],
];

describe('URI template matching', () => {
  for (const [template, topic, expected] of CASES) {
    it(`${template} ${expected ? 'matches' : 'does not match'} ${topic}`, () => {
      assert.equal(compileUriTemplate(template).test(topic), expected);
    });
  }
});

describe('URI template syntax errors', () => {
  // biome-ignore format: a table, one case per line
  const invalid: readonly (readonly [string, string])[] = [
    ['unclosed expression', 'https://example.com/{id'],
    ['empty expression', 'https://example.com/{}'],
    ['reserved operator', 'https://example.com/{!id}'],
    ['invalid variable name', 'https://example.com/{a-b}'],
    ['nested brace', 'https://example.com/{a{b}}'],
    ['stray closing brace', 'https://example.com/a}'],
    ['space in a literal', 'https://example.com/a b'],
    ['bad percent-escape', 'https://example.com/%zz/{x}'],
    ['prefix of zero', 'https://example.com/{x:0}'],
  ];
  for (const [name, template] of invalid) {
    it(`refuses ${name}`, () => {
      assert.throws(() => compileUriTemplate(template), UriTemplateSyntaxError);
    });
  }
});

describe('URI template matching is linear time', () => {
  // The uri-template-matcher package backtracks: 450 ms for the first case at 200 characters
  // (measured), multiplying with each expression.
  // biome-ignore format: a table, one case per line
  const pathological: readonly (readonly [string, string])[] = [
    ['{a}x{b}x{c}x{d}x{e}x{f}y', 'x'.repeat(50_000)],
    ['{+a}{+b}{+c}{+d}{+e}y', 'z'.repeat(50_000)],
  ];
  for (const [template, topic] of pathological) {
    it(`${template} against ${topic.length} characters finishes fast`, () => {
      const { test } = compileUriTemplate(template);
      const started = performance.now();
      assert.equal(test(topic), false);
      assert.ok(performance.now() - started < 1000);
    });
  }
});

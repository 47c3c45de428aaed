import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { countEngineReads } from '../src/matchers-re2.js';
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

/**
 * Linear time, checked by counting the engine's work rather than timing it (a time bound flakes
 * on a loaded machine): `countEngineReads` (matchers-re2.ts) counts every character the matcher's
 * engine reads. RE2 reads each character once per pass (lazy DFA, then the NFA if the DFA gives
 * up), so a topic of n characters costs at most READS_PER_CHARACTER × n reads, plus a few for the
 * context around the ends; a backtracking matcher re-reads the topic once per split it tries
 * (the uri-template-matcher package: 450 ms for the first case at 200 characters, measured,
 * multiplying with each expression), so its reads pass the bound at the first size and the
 * count stops it there (the limit throws). None of these topics can be rejected before its last
 * character (every prefix can still match), so a matcher that reads fewer than n characters is
 * not the counted engine and proves nothing: that fails too.
 */
const READS_PER_CHARACTER = 2;
const READS_AT_THE_ENDS = 8;
const readBound = (length: number) => READS_PER_CHARACTER * length + READS_AT_THE_ENDS;

describe('URI template matching is linear time (counted in character reads)', () => {
  // biome-ignore format: a table, one case per line
  const pathological: readonly (readonly [string, (length: number) => string])[] = [
    ['{a}x{b}x{c}x{d}x{e}x{f}y', (length) => 'x'.repeat(length)],
    ['{+a}{+b}{+c}{+d}{+e}y', (length) => 'z'.repeat(length)],
  ];
  for (const [template, topicOf] of pathological) {
    it(`${template}: reads stay within ${READS_PER_CHARACTER}n + ${READS_AT_THE_ENDS}, n = 16 … 65,536`, () => {
      const { test } = compileUriTemplate(template);
      let previous: number | undefined;
      for (let length = 16; length <= 65_536; length *= 2) {
        const { result, reads } = countEngineReads(() => test(topicOf(length)), readBound(length));
        assert.equal(result, false);
        assert.ok(reads >= length, `${reads} reads of ${length} characters: not the counted engine`);
        // Doubling the topic at most doubles the work (plus the constant at the ends).
        if (previous !== undefined) {
          assert.ok(reads <= 2 * previous + READS_AT_THE_ENDS, `${previous} then ${reads} reads`);
        }
        previous = reads;
      }
    });
  }
});

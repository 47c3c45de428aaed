import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { RE2JS } from 're2js';
import {
  compileLegacySelector,
  compileTopicSelector,
  MAX_PATTERN_TOPIC_LENGTH,
  selectorCacheStats,
} from '../src/matchers.js';
import {
  compileBounded,
  estimateProgramSize,
  MAX_PROGRAM_SIZE,
  PatternTooComplexError,
} from '../src/matchers-re2.js';
import { uriTemplateToRegexp } from '../src/matchers-uri-template.js';
import { throwsWith } from './support.js';

/**
 * Issue #8, defect 3: a pattern's compile cost, match cost and cached memory are bounded. Each
 * hostile row below compiled (or ran) for seconds on ce84a74; now it is refused as an invalid
 * pattern, and the refusal happens before any RE2 compile.
 */
const HUB = 'https://example.com/.well-known/mercure';
const curlyStars = `${'{*}'.repeat(80)}x://example.com/`;
const protocolGroup = `(${'[a-z]*'.repeat(80)}x)://example.com/`;
const manyVariables = `https://example.com/{${Array.from({ length: 150 }, (_, index) => `v${index}`).join(',')}}`;

// [matchType, pattern, why it is refused]
// biome-ignore format: a table, one case per line
const REFUSED: readonly (readonly [string, string, string])[] = [
  ['Regexp', 'a{1000}'.repeat(585), 'the issue\'s pattern: 585,000 instructions, 1.5 s to compile'],
  ['Regexp', 'a{101}', 'a repetition count over 100'],
  ['Regexp', 'a{2,101}', 'a repetition maximum over 100'],
  ['Regexp', 'a{90}'.repeat(12), '1080 instructions from bounded counts'],
  ['Regexp', '(?:.{0,100}b)'.repeat(9), 'counted wildcards that keep 900 NFA threads alive'],
  ['Regexp', '(?:(?:a{10}){10}){10}', 'nested counts multiply'],
  ['Regexp', `${'('.repeat(21)}a${')'.repeat(21)}`, 'nesting deeper than 20'],
  ['Regexp', 'x'.repeat(1001), 'a literal of 1001 instructions'],
  ['URLPattern', `https://example.com/${'(.{0,100}b)'.repeat(9)}`, 'custom regexp groups are bounded like Regexp'],
  ['URLPattern', `https://example.com/:a(${'a{100}'.repeat(11)})`, 'a named group with a custom regexp'],
  ['URLPattern', curlyStars, 'the polyfill runs the protocol part as a RegExp: 4.3 s on ce84a74'],
  ['URLPattern', protocolGroup, 'a backtracking protocol group: 1.2 s on ce84a74'],
  ['URLPattern', `${'*'.repeat(80)}x://example.com/`, 'asterisks in the protocol part'],
  ['URLPattern', '(https?|[a-z]*[a-z]*x)://example.com/', 'a protocol group that is not a scheme list'],
  ['URITemplate', manyVariables, '150 variables become a count over 100'],
];

// [matchType, pattern, topic that matches]
// biome-ignore format: a table, one case per line
const ACCEPTED: readonly (readonly [string, string, string])[] = [
  ['URLPattern', 'https://example.com/books/:id', 'https://example.com/books/1'],
  ['URLPattern', '(https?)://example.com/*', 'http://example.com/x'],
  ['URLPattern', '(https?|wss?)://example.com/*', 'wss://example.com/x'],
  ['URLPattern', 'http{s}?://example.com/*', 'https://example.com/x'],
  ['URLPattern', '*://example.com/x', 'https://example.com/x'],
  ['URLPattern', ':scheme://example.com/x', 'https://example.com/x'],
  ['URLPattern', '/books/(\\d+)', 'https://example.com/books/12'],
  ['URLPattern', 'https://example.com/books/:id(\\d{1,10})', 'https://example.com/books/12'],
  ['Regexp', 'https://example\\.com/users/[0-9]{1,10}', 'https://example.com/users/42'],
  ['Regexp', 'https://example\\.com/(?:books|users)/[^/]+', 'https://example.com/books/x'],
  ['Regexp', '(?i)HTTPS://[[:alpha:]]+\\.example\\.com/\\p{L}+', 'https://a.example.com/é'],
  ['Regexp', 'a{100}', 'a'.repeat(100)],
  ['URITemplate', 'https://example.com/users/{id}/books{?page,sort}', 'https://example.com/users/1/books?page=2'],
];

describe('pattern bounds: hostile patterns are refused before compiling', () => {
  for (const [matchType, pattern, why] of REFUSED) {
    it(`${matchType} refused: ${why}`, () => {
      const before = selectorCacheStats().entries;
      throwsWith(() => compileTopicSelector(pattern, matchType, { baseUrl: HUB }), 'invalid_pattern', 400);
      assert.equal(selectorCacheStats().entries, before, 'a refused pattern is not cached');
    });
  }

  it('the estimate alone refuses the regexp rows (no RE2 compile is needed to say no)', () => {
    for (const [matchType, pattern] of REFUSED) {
      if (matchType !== 'Regexp') continue;
      assert.throws(() => estimateProgramSize(pattern), PatternTooComplexError, pattern.slice(0, 40));
    }
    assert.throws(() => estimateProgramSize(uriTemplateToRegexp(manyVariables)), PatternTooComplexError);
  });

  for (const [matchType, pattern, topic] of ACCEPTED) {
    it(`${matchType} still accepted: ${pattern}`, () => {
      const selector = compileTopicSelector(pattern, matchType, { baseUrl: HUB });
      assert.equal(selector.matches(topic), true);
      assert.ok(selector.programSize > 0 && selector.programSize <= MAX_PROGRAM_SIZE);
    });
  }
});

describe('pattern bounds: the estimate is an upper bound of the real program', () => {
  // Sources as the compilers generate them and as clients write them.
  // biome-ignore format: a table, one case per line
  const SOURCES = [
    'https://example\\.com/users/[0-9]+', '(?:.*b){50}', '(?:a|bc|def)*x{3,7}', '[^/]+?(?:/[^/]+?)*',
    '(?s:.)+?', '\\Qa.b*c\\E+', '(?P<name>x)(?<other>y)?', '(?:(?:a{3}){4}){5}', '\\x{2028}\\p{Greek}\\pL',
    'caf\u00e9\u{1F600}', uriTemplateToRegexp('https://example.com/{+path}{?a,b,c*}{#frag}'),
    uriTemplateToRegexp('{/a,b,c}{;x,y}{.z*}'),
  ];
  for (const source of SOURCES) {
    it(source, () => {
      const real = RE2JS.compile(source).programSize();
      assert.ok(estimateProgramSize(source) >= real, `estimate under ${real}`);
      assert.equal(compileBounded(source).programSize, real);
    });
  }
});

/** A seeded generator of RE2 syntax: atoms, classes, groups, alternations, flags and repeats. */
function randomRegexp(random: () => number, depth = 0): string {
  const pick = <T>(items: readonly T[]): T => items[Math.floor(random() * items.length)] as T;
  let out = '';
  for (let count = 1 + Math.floor(random() * 4); count > 0; count--) {
    const roll = random();
    let atom: string;
    if (roll < 0.3 || depth > 3) {
      atom = pick([
        'a',
        '.',
        '\\d',
        '[a-z]',
        '[^/]',
        '\\pL',
        '\\x{41}',
        'é',
        '\\.',
        '\\b',
        '^',
        '$',
        '[[:alpha:]]',
        '[]a]',
      ]);
    } else if (roll < 0.6) {
      const alternative = random() < 0.3 ? `|${randomRegexp(random, depth + 1)}` : '';
      atom = `(${pick(['', '?:', '?i:', `?P<n${count}${depth}>`])}${randomRegexp(random, depth + 1)}${alternative})`;
    } else {
      atom = pick(['(?i)', '(?s)', '\\Qx.y\\E', 'ab', '{', 'a{,2}']);
    }
    if (random() < 0.5) atom += pick(['*', '+', '?', '*?', '{2}', '{0,3}', '{2,}', '{1,5}?', '{3,4}']);
    out += atom;
  }
  return out;
}

describe('pattern bounds: the estimate bounds random RE2 syntax too', () => {
  it('2,000 seeded random patterns: estimate >= real program size', () => {
    let state = 8;
    const random = () => {
      state = (state * 1103515245 + 12345) & 0x7fffffff;
      return state / 0x7fffffff;
    };
    let compared = 0;
    for (let index = 0; index < 2000; index++) {
      const source = randomRegexp(random);
      let real: number;
      try {
        real = RE2JS.compile(source).programSize();
      } catch {
        continue; // not RE2 syntax: nothing to bound
      }
      compared += 1;
      assert.ok(estimateProgramSize(source, Number.MAX_SAFE_INTEGER) >= real, source);
    }
    assert.ok(compared > 1000, `only ${compared} patterns compiled`);
  });
});

describe('pattern bounds: topic length cap for pattern matching', () => {
  const atCap = `https://example.com/${'x'.repeat(MAX_PATTERN_TOPIC_LENGTH - 'https://example.com/'.length)}`;
  const overCap = `${atCap}x`;
  // biome-ignore format: a table, one case per line
  const SELECTORS: readonly (readonly [string, string])[] = [
    ['URLPattern', 'https://example.com/*'],
    ['Regexp', 'https://example\\.com/x+'],
    ['URITemplate', 'https://example.com/{id}'],
  ];
  for (const [matchType, pattern] of SELECTORS) {
    it(`${matchType}: a topic of ${MAX_PATTERN_TOPIC_LENGTH} matches, one longer never does`, () => {
      const selector = compileTopicSelector(pattern, matchType, { baseUrl: HUB });
      assert.equal(selector.matches(atCap), true);
      assert.equal(selector.matches(overCap), false);
    });
  }

  it('Exact, `*` and a legacy exact topic are not capped', () => {
    assert.equal(compileTopicSelector(overCap).matches(overCap), true);
    assert.equal(compileTopicSelector('*', 'URLPattern').matches(overCap), true);
    assert.equal(compileLegacySelector(overCap).matches(overCap), true);
  });
});

describe('pattern bounds: the selector cache is bounded in bytes', () => {
  it('hundreds of distinct heavy patterns stay within the byte budget', () => {
    const { compilations } = selectorCacheStats();
    // Each is near the program bound: the heaviest entries a client can create.
    for (let index = 0; index < 800; index++) {
      compileTopicSelector(`https://example.com/${index}/(?:[a-z]{0,60}/){5}`, 'Regexp');
    }
    const stats = selectorCacheStats();
    assert.equal(stats.compilations - compilations, 800);
    assert.ok(stats.bytes <= stats.maxBytes, `${stats.bytes} > ${stats.maxBytes}`);
    assert.ok(stats.entries < 800, 'entries were evicted for bytes, not kept by count');
  });
});

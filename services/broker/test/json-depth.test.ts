/* The pre-parse nesting scanner of the body parser (json-depth.ts): table-driven. */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { depthExceededAt } from '../src/json-depth.js';

const ROWS: [string, string, number, number][] = [
  // [case, text, max, expected offset or -1]
  ['scalar', '42', 0, -1],
  ['flat object at the bound', '{"a":1}', 1, -1],
  ['one level over', '{"a":[1]}', 1, 5],
  ['siblings do not add up', '[[],[],[]]', 2, -1],
  ['brackets inside a string', '["[[[[{{{{"]', 1, -1],
  ['escaped quote keeps the string open', '["\\"[[["]', 1, -1],
  ['escaped backslash closes the string', '["\\\\",[[1]]]', 2, 7],
  ['deep nesting', `${'['.repeat(1_000_000)}${']'.repeat(1_000_000)}`, 100, 100],
  ['stray closers do not bank depth', ']]]][[', 1, 5],
  ['an escaped backslash run before a quote', '["a\\\\\\"[[",[[1]]]', 2, 12],
  ['unterminated string', '[["[[[[', 2, -1],
];

for (const [name, text, max, expected] of ROWS) {
  test(`depthExceededAt: ${name}`, () => {
    assert.equal(depthExceededAt(text, max), expected);
  });
}

/** The scanner before it jumped over strings with indexOf: one character at a time. */
function referenceDepthExceededAt(text: string, max: number): number {
  let depth = 0;
  let inString = false;
  for (let index = 0; index < text.length; index++) {
    const code = text.charCodeAt(index);
    if (inString) {
      if (code === 0x5c) index++;
      else if (code === 0x22) inString = false;
    } else if (code === 0x22) {
      inString = true;
    } else if (code === 0x5b || code === 0x7b) {
      if (++depth > max) return index;
    } else if ((code === 0x5d || code === 0x7d) && depth > 0) {
      depth--;
    }
  }
  return -1;
}

test('depthExceededAt answers as a scan of every character, on 20,000 random texts', () => {
  // A seeded generator (mulberry32): a failure names its seed and text, and reproduces.
  let seed = 0x5eed;
  const random = () => {
    seed = (seed + 0x6d2b79f5) | 0;
    let t = Math.imul(seed ^ (seed >>> 15), 1 | seed);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
  const alphabet = ['[', ']', '{', '}', '"', '\\', 'a', ',', ':'];
  for (let round = 0; round < 20_000; round++) {
    const length = Math.floor(random() * 24);
    let text = '';
    for (let i = 0; i < length; i++) text += alphabet[Math.floor(random() * alphabet.length)];
    const max = Math.floor(random() * 4);
    assert.equal(
      depthExceededAt(text, max),
      referenceDepthExceededAt(text, max),
      `${JSON.stringify(text)} max ${max}`,
    );
  }
});

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
];

for (const [name, text, max, expected] of ROWS) {
  test(`depthExceededAt: ${name}`, () => {
    assert.equal(depthExceededAt(text, max), expected);
  });
}

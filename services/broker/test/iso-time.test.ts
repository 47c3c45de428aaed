/* isoTime (pop.ts): the pop body's createdAt, equal to Date#toISOString whatever it was asked before. */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { isoTime } from '../src/pop.js';

test('isoTime equals toISOString across seconds, before 1970 and past year 9999, in any order', () => {
  const moments = [
    0, 1, 9, 10, 99, 100, 999, 1000, 1001, -1, -999, -1000, -1001, 1_764_700_000_123, 1_764_700_000_003,
    1_764_700_000_999, 1_764_700_001_000, 1_764_700_000_050, 253_402_300_799_999, 253_402_300_800_000,
    -62_198_755_200_001,
  ];
  // Each moment after every other one: the kept second must never leak into another second.
  for (const previous of moments) {
    for (const ms of moments) {
      isoTime(previous);
      assert.equal(isoTime(ms), new Date(ms).toISOString(), `${ms} after ${previous}`);
    }
  }
});

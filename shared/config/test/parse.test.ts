import assert from 'node:assert/strict';
import { test } from 'node:test';
import { parseBoolean, parseDuration } from '../src/index.js';

test('booleans accept true/false/1/0 in any case and nothing else', () => {
  const cases: [string, boolean | undefined][] = [
    ['true', true],
    ['TRUE', true],
    ['True', true],
    ['1', true],
    ['false', false],
    ['FaLsE', false],
    ['0', false],
    [' true ', true],
    ['yes', undefined],
    ['on', undefined],
    ['2', undefined],
    ['', undefined],
  ];
  for (const [text, expected] of cases) assert.equal(parseBoolean(text), expected, text);
});

test('durations accept milliseconds or a number with a unit', () => {
  const cases: [string, number | undefined][] = [
    ['0', 0],
    ['1500', 1500],
    ['250ms', 250],
    ['40s', 40_000],
    ['10m', 600_000],
    ['2h', 7_200_000],
    ['1d', 86_400_000],
    ['1.5s', 1500],
    ['1h30m', 5_400_000],
    ['10 m', undefined],
    ['10x', undefined],
    ['s', undefined],
    ['-5', undefined],
    ['40s junk', undefined],
    ['', undefined],
  ];
  for (const [text, expected] of cases) assert.equal(parseDuration(text), expected, text);
});

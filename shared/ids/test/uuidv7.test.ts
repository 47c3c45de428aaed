import assert from 'node:assert/strict';
import { test } from 'node:test';
import { uuidV7Generator, uuidv7 } from '../src/index.js';

const UUID_V7 = /^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;
const msOf = (id: string) => Number.parseInt(id.slice(0, 8) + id.slice(9, 13), 16);

function assertIncreasing(ids: readonly string[]): void {
  for (let index = 1; index < ids.length; index++) {
    assert.ok((ids[index - 1] as string) < (ids[index] as string), `id ${index} not after id ${index - 1}`);
  }
}

test('ids are UUIDv7 (version 7, RFC 9562 variant) carrying the time of their generation', () => {
  const before = Date.now();
  const ids = Array.from({ length: 10_000 }, () => uuidv7());
  const afterward = Date.now();
  for (const id of ids) {
    assert.match(id, UUID_V7);
    assert.ok(msOf(id) >= before && msOf(id) <= afterward + 1, `time of ${id}`);
  }
});

test('ids are strictly increasing, so unique, across many per millisecond', () => {
  const ids = Array.from({ length: 200_000 }, () => uuidv7());
  assertIncreasing(ids);
  assert.equal(new Set(ids).size, ids.length);
});

test('a frozen clock still gives increasing ids of that millisecond', () => {
  const next = uuidV7Generator({ now: () => 1_700_000_000_000 });
  const ids = Array.from({ length: 50_000 }, () => next());
  assertIncreasing(ids);
  for (const id of ids.slice(0, 10)) assert.equal(msOf(id), 1_700_000_000_000);
});

test('a clock going back does not reorder ids: they count on from the last one', () => {
  let now = 1_700_000_000_500;
  const next = uuidV7Generator({ now: () => now });
  const first = next();
  now -= 400;
  const second = next();
  assert.ok(first < second);
  assert.equal(msOf(second), 1_700_000_000_500);
});

test('an exhausted counter borrows the next millisecond', () => {
  // All-ones random bytes seed the counter at its maximum: the next id of the same
  // millisecond cannot count on, and takes the next millisecond instead.
  const next = uuidV7Generator({ now: () => 1_700_000_000_000, fillRandom: (buffer) => buffer.fill(0xff) });
  const first = next();
  const second = next();
  assert.equal(msOf(first), 1_700_000_000_000);
  assert.equal(msOf(second), 1_700_000_000_001);
  assert.ok(first < second);
  assert.match(second, UUID_V7);
});

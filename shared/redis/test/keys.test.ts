import assert from 'node:assert/strict';
import { test } from 'node:test';
import { hashTag, keyspace } from '../src/index.js';

test('keyspace joins parts under its prefix and nests', () => {
  const space = keyspace('herald:');
  assert.equal(space.key('queue', 'orders'), 'herald:queue:orders');
  assert.equal(space.child('hub').key('history'), 'herald:hub:history');
  assert.equal(keyspace().prefix, 'herald:');
});

test('hash tags wrap a value and neutralise braces inside it', () => {
  assert.equal(hashTag('orders'), '{orders}');
  assert.equal(hashTag('a{b}c'), '{a(b)c}');
});

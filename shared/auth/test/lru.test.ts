import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { LruMap } from '../src/lru.js';

/** The byte budget of LruMap (the selector cache's bound; issue #8, defect 3). */
describe('LruMap byte budget', () => {
  const weighted = () => new LruMap<string, number>(100, { maxBytes: 100, sizeOf: (_key, value) => value });

  it('evicts the least recently used entries until the bytes fit', () => {
    const cache = weighted();
    cache.set('a', 40);
    cache.set('b', 40);
    cache.get('a'); // `b` is now the oldest
    cache.set('c', 40);
    assert.equal(cache.get('b'), undefined);
    assert.equal(cache.get('a'), 40);
    assert.equal(cache.get('c'), 40);
    assert.equal(cache.bytes, 80);
  });

  it('does not keep an entry heavier than the whole budget, and keeps the others', () => {
    const cache = weighted();
    cache.set('a', 30);
    cache.set('huge', 101);
    assert.equal(cache.get('huge'), undefined);
    assert.equal(cache.get('a'), 30);
    assert.equal(cache.bytes, 30);
  });

  it('replacing, deleting and clearing keep the byte count exact', () => {
    const cache = weighted();
    cache.set('a', 30);
    cache.set('a', 50);
    assert.equal(cache.bytes, 50);
    cache.set('b', 20);
    cache.delete('a');
    assert.equal(cache.bytes, 20);
    cache.clear();
    assert.equal(cache.bytes, 0);
    assert.equal(cache.size, 0);
  });

  it('the entry count still bounds a cache of light entries', () => {
    const cache = new LruMap<string, number>(3, { maxBytes: 1000, sizeOf: () => 1 });
    for (const key of ['a', 'b', 'c', 'd']) cache.set(key, 1);
    assert.equal(cache.size, 3);
    assert.equal(cache.get('a'), undefined);
  });

  it('refuses a non-positive byte budget', () => {
    assert.throws(() => new LruMap(1, { maxBytes: 0, sizeOf: () => 1 }), RangeError);
  });
});

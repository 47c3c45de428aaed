import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { LruMap } from '../src/lru.js';
import { VerifiedTokenCache } from '../src/token-cache.js';

describe('verified-token cache', () => {
  it('is bounded: the least recently used token is forgotten first', () => {
    const cache = new VerifiedTokenCache<string>({ maxEntries: 2 });
    cache.set('token-a', 'A', 0);
    cache.set('token-b', 'B', 0);
    assert.equal(cache.get('token-a', 0), 'A'); // a is now the most recent
    cache.set('token-c', 'C', 0);
    assert.equal(cache.size, 2);
    assert.equal(cache.get('token-b', 0), undefined);
    assert.deepEqual([cache.get('token-a', 0), cache.get('token-c', 0)], ['A', 'C']);
  });

  // [age in ms, still served]
  // biome-ignore format: a table, one case per line
  const ages: readonly (readonly [number, boolean])[] = [
    [0, true],
    [59_999, true],
    [60_000, false],
    [-1, false], // a clock that went backwards does not extend trust
  ];
  for (const [age, served] of ages) {
    it(`an entry ${age} ms old with a 60 s TTL is ${served ? 'served' : 'dropped'}`, () => {
      const cache = new VerifiedTokenCache<string>({ maxTtlMs: 60_000 });
      cache.set('token', 'verified', 1_000_000);
      assert.equal(cache.get('token', 1_000_000 + age), served ? 'verified' : undefined);
    });
  }

  it('stores no token text, only its hash', () => {
    const cache = new VerifiedTokenCache<string>();
    cache.set('header.payload.signature', 'v', 0);
    const inner = (cache as unknown as { entries: { entries: Map<string, unknown> } }).entries.entries;
    assert.ok(![...inner.keys()].some((key) => key.includes('payload')));
  });
});

describe('LruMap', () => {
  it('refuses a non-positive bound', () => {
    assert.throws(() => new LruMap(0), RangeError);
  });
});

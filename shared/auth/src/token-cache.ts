import { hash } from 'node:crypto';
import { LruMap } from './lru.js';

export const TOKEN_CACHE_DEFAULT_ENTRIES = 10_000;
/**
 * A verified token is trusted from the cache for at most this long, even when its `exp` is
 * further away: a key removed from the JWKS (revocation) or a configuration reload must take
 * effect within this bound, not at the token's expiry.
 */
export const TOKEN_CACHE_DEFAULT_TTL_MS = 5 * 60_000;

export interface TokenCacheOptions {
  readonly maxEntries?: number | undefined;
  readonly maxTtlMs?: number | undefined;
}

interface Entry<V> {
  readonly value: V;
  readonly cachedAt: number;
}

/**
 * Verified tokens by the SHA-256 of their compact form (auth.md: "Verified tokens may be cached
 * by their hash until exp": reconnect storms re-present the same token). Only the hash is kept,
 * never the token. Bounded in count and age; the caller re-checks the temporal claims on every
 * hit, so an entry never outlives its token's `exp`.
 */
export class VerifiedTokenCache<V> {
  private readonly entries: LruMap<string, Entry<V>>;
  private readonly maxTtlMs: number;

  constructor(options: TokenCacheOptions = {}) {
    this.entries = new LruMap(options.maxEntries ?? TOKEN_CACHE_DEFAULT_ENTRIES);
    this.maxTtlMs = options.maxTtlMs ?? TOKEN_CACHE_DEFAULT_TTL_MS;
  }

  get size(): number {
    return this.entries.size;
  }

  get(token: string, now: number): V | undefined {
    const key = tokenHash(token);
    const entry = this.entries.get(key);
    if (!entry) return undefined;
    if (now - entry.cachedAt >= this.maxTtlMs || now < entry.cachedAt) {
      this.entries.delete(key);
      return undefined;
    }
    return entry.value;
  }

  set(token: string, value: V, now: number): void {
    this.entries.set(tokenHash(token), { value, cachedAt: now });
  }

  delete(token: string): void {
    this.entries.delete(tokenHash(token));
  }

  clear(): void {
    this.entries.clear();
  }
}

/** One-shot `hash` rather than a Hash object: this runs on every authenticated request. */
function tokenHash(token: string): string {
  return hash('sha256', token, 'base64url');
}

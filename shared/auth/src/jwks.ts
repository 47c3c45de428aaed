import https from 'node:https';
import { createRequire } from 'node:module';
import { algorithmFitsKey, type JwsAlgorithm } from './algorithms.js';
import { importJwk, type JwkKeyType, type VerificationKey } from './keys.js';
import { type AuthLogger, silentLogger } from './logger.js';

/** Through require, not `import`: see STATUS_CODES in @herald/errors (Node 26 loads undici). */
const http = createRequire(import.meta.url)('node:http') as typeof import('node:http');

/** Seed: "The body is capped at 1 MiB and the response may be Content-Length'd or chunked." */
export const JWKS_MAX_BYTES = 1024 * 1024;
/** Seed: an unknown kid triggers "one re-fetch, throttled to at most once every 5 seconds". */
export const JWKS_REFETCH_INTERVAL_MS = 5_000;
export const JWKS_DEFAULT_TIMEOUT_MS = 5_000;
/**
 * Keys are re-read at most this old even when every kid is known, so a key the identity
 * provider *removed* (revoked) stops verifying without a restart. Queen does the same with
 * `JWT_JWKS_REFRESH_INTERVAL` (default 3600 s).
 */
export const JWKS_DEFAULT_MAX_AGE_MS = 3_600_000;

export class JwksFetchError extends Error {
  override readonly name = 'JwksFetchError';
}

export interface FetchJwksOptions {
  readonly timeoutMs: number;
  readonly maxBytes: number;
  readonly signal?: AbortSignal | undefined;
}

/**
 * GETs a JWK set with a hard byte cap and a deadline covering connect and body. The cap is
 * enforced twice: up front from Content-Length, and on the running byte count, because a chunked
 * response announces no length. Redirects are not followed (a JWKS URL is configured exactly).
 * Error messages are our own fixed texts: they may be logged, and never quote the body.
 */
export function fetchJwksDocument(url: URL, options: FetchJwksOptions): Promise<unknown> {
  const transport = url.protocol === 'https:' ? https : url.protocol === 'http:' ? http : undefined;
  if (!transport) return Promise.reject(new JwksFetchError('unsupported URL scheme'));
  const { timeoutMs, maxBytes, signal } = options;
  return new Promise((resolve, reject) => {
    let settled = false;
    const tooLarge = () => new JwksFetchError(`response body exceeds ${maxBytes} bytes`);
    const finish = (error: Error | undefined, value?: unknown) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      signal?.removeEventListener('abort', onAbort);
      if (error) {
        request.destroy();
        reject(error);
      } else {
        resolve(value);
      }
    };
    const request = transport.get(
      url,
      { headers: { accept: 'application/jwk-set+json, application/json' } },
      (response) => {
        const status = response.statusCode ?? 0;
        if (status !== 200) {
          response.resume();
          finish(new JwksFetchError(`unexpected HTTP status ${status}`));
          return;
        }
        const declaredLength = Number(response.headers['content-length']);
        if (Number.isFinite(declaredLength) && declaredLength > maxBytes) {
          finish(tooLarge());
          return;
        }
        const chunks: Buffer[] = [];
        let received = 0;
        response.on('data', (chunk: Buffer) => {
          received += chunk.length;
          if (received > maxBytes) {
            finish(tooLarge());
            return;
          }
          chunks.push(chunk);
        });
        response.on('end', () => {
          let document: unknown;
          try {
            document = JSON.parse(Buffer.concat(chunks).toString('utf8'));
          } catch {
            finish(new JwksFetchError('response body is not JSON'));
            return;
          }
          finish(undefined, document);
        });
        response.on('close', () => {
          if (!response.complete) finish(new JwksFetchError('connection closed before the body ended'));
        });
        response.on('error', () => finish(new JwksFetchError('response stream failed')));
      },
    );
    request.on('error', (error: NodeJS.ErrnoException) =>
      finish(new JwksFetchError(`request failed${error.code ? ` (${error.code})` : ''}`)),
    );
    const timer = setTimeout(() => finish(new JwksFetchError(`timed out after ${timeoutMs} ms`)), timeoutMs);
    const onAbort = () => finish(new JwksFetchError('aborted'));
    if (signal?.aborted) onAbort();
    else signal?.addEventListener('abort', onAbort, { once: true });
  });
}

export interface JwksCacheOptions {
  readonly url: string | URL;
  readonly logger?: AuthLogger | undefined;
  /**
   * Key types read from the set. The broker reads RSA and OKP/Ed25519 only (seed: "Only two key
   * types are read"); the hub also reads EC. Everything else is skipped and counted.
   */
  readonly keyTypes?: readonly JwkKeyType[] | undefined;
  /** Clock in milliseconds; injected by tests to observe the throttle without sleeping. */
  readonly now?: (() => number) | undefined;
  readonly timeoutMs?: number | undefined;
  readonly maxBytes?: number | undefined;
  readonly refetchIntervalMs?: number | undefined;
  /** 0 disables the periodic refresh. */
  readonly maxAgeMs?: number | undefined;
  /** The setting the URL came from, named in log lines (`JWT_JWKS_URL`). */
  readonly setting?: string | undefined;
}

/** A URL safe to log: no credentials, no query string (either may carry secrets). */
function redactUrl(url: URL): string {
  return `${url.protocol}//${url.host}${url.pathname}`;
}

/**
 * The JWKS cache both services use (one implementation, auth.md "JWKS cache"):
 *
 * - `prefetch()` at boot; a failure is logged and is not fatal (the first token pays the fetch);
 * - keys are kept in document order and indexed by `kid`;
 * - a lookup miss triggers at most one fetch per `refetchIntervalMs` (5 s) for the whole cache,
 *   and concurrent misses await the same in-flight fetch, so a flood of random kids costs one
 *   fetch, not one per request;
 * - a token without `kid` gets the first key of the document that fits its algorithm;
 * - the set is re-read in the background once older than `maxAgeMs`.
 */
export class JwksCache {
  readonly url: URL;
  private readonly logger: AuthLogger;
  private readonly keyTypes: ReadonlySet<JwkKeyType>;
  private readonly now: () => number;
  private readonly timeoutMs: number;
  private readonly maxBytes: number;
  private readonly refetchIntervalMs: number;
  private readonly maxAgeMs: number;
  private readonly setting: string;

  private keys: readonly VerificationKey[] = [];
  private keysById = new Map<string, VerificationKey>();
  private inFlight: Promise<number> | undefined;
  private lastAttemptAt = Number.NEGATIVE_INFINITY;
  private loadedAt: number | undefined;
  private fetches = 0;
  private readonly abort = new AbortController();

  constructor(options: JwksCacheOptions) {
    this.url = typeof options.url === 'string' ? new URL(options.url) : options.url;
    if (this.url.protocol !== 'https:' && this.url.protocol !== 'http:') {
      throw new TypeError('a JWKS URL must use https:// or http://');
    }
    this.logger = options.logger ?? silentLogger;
    this.keyTypes = new Set(options.keyTypes ?? ['RSA', 'EC', 'OKP']);
    this.now = options.now ?? Date.now;
    this.timeoutMs = options.timeoutMs ?? JWKS_DEFAULT_TIMEOUT_MS;
    this.maxBytes = options.maxBytes ?? JWKS_MAX_BYTES;
    this.refetchIntervalMs = options.refetchIntervalMs ?? JWKS_REFETCH_INTERVAL_MS;
    this.maxAgeMs = options.maxAgeMs ?? JWKS_DEFAULT_MAX_AGE_MS;
    this.setting = options.setting ?? 'JWKS URL';
    if (this.url.protocol === 'http:') {
      // Seed: "http:// is accepted and warned about … signing keys fetched over cleartext are
      // MITM-forgeable." A warning, not a refusal.
      this.logger.warn(
        { setting: this.setting, url: redactUrl(this.url) },
        'JWKS URL uses http://: signing keys fetched over cleartext are forgeable by anyone on the network path (MITM)',
      );
    }
  }

  /** Usable keys currently cached. */
  get keyCount(): number {
    return this.keys.length;
  }

  /** Fetches attempted so far (for tests and diagnostics). */
  get fetchCount(): number {
    return this.fetches;
  }

  /** Boot-time fetch. Never rejects: seed, "A failed pre-fetch is not fatal". */
  async prefetch(): Promise<void> {
    try {
      await this.refresh();
    } catch (error) {
      this.logger.warn(
        { setting: this.setting, url: redactUrl(this.url), error: describe(error) },
        'JWKS pre-fetch failed (will retry on demand)',
      );
    }
  }

  /**
   * Re-reads the set now, or joins the fetch already in flight. Resolves to the number of usable
   * keys; rejects with a JwksFetchError (the previous keys stay in place).
   */
  refresh(): Promise<number> {
    if (this.inFlight) return this.inFlight;
    if (this.abort.signal.aborted) return Promise.reject(new JwksFetchError('cache closed'));
    this.lastAttemptAt = this.now();
    this.fetches += 1;
    const attempt = this.load().finally(() => {
      this.inFlight = undefined;
    });
    this.inFlight = attempt;
    return attempt;
  }

  /**
   * The key for a token. With a `kid`: that key or nothing. Without one: the first key of the
   * document that fits `alg`. A miss re-fetches the set unless a fetch happened less than
   * `refetchIntervalMs` ago (then it joins an in-flight one if any, else answers undefined).
   */
  async keyFor(kid: string | undefined, alg?: JwsAlgorithm): Promise<VerificationKey | undefined> {
    const wantedKid = kid === '' ? undefined : kid;
    this.refreshIfStale();
    const cached = this.lookup(wantedKid, alg);
    if (cached) return cached;
    if (this.abort.signal.aborted) return undefined;
    const throttled = this.now() - this.lastAttemptAt < this.refetchIntervalMs;
    if (!this.inFlight && throttled) return undefined;
    try {
      await this.refresh();
    } catch (error) {
      this.logger.warn(
        { setting: this.setting, url: redactUrl(this.url), error: describe(error) },
        'JWKS fetch failed',
      );
    }
    return this.lookup(wantedKid, alg);
  }

  /** Aborts an in-flight fetch and refuses new ones. */
  close(): void {
    this.abort.abort();
  }

  private lookup(kid: string | undefined, alg: JwsAlgorithm | undefined): VerificationKey | undefined {
    if (kid !== undefined) return this.keysById.get(kid);
    return this.keys.find(
      (key) =>
        alg === undefined ||
        (algorithmFitsKey(alg, key.family) && (key.alg === undefined || key.alg === alg)),
    );
  }

  private refreshIfStale(): void {
    if (this.maxAgeMs <= 0 || this.loadedAt === undefined || this.inFlight) return;
    const now = this.now();
    if (now - this.loadedAt < this.maxAgeMs) return;
    if (now - this.lastAttemptAt < this.refetchIntervalMs) return;
    this.refresh().catch((error: unknown) => {
      this.logger.warn(
        { setting: this.setting, url: redactUrl(this.url), error: describe(error) },
        'JWKS periodic refresh failed (keeping the previous keys)',
      );
    });
  }

  private async load(): Promise<number> {
    const document = await fetchJwksDocument(this.url, {
      timeoutMs: this.timeoutMs,
      maxBytes: this.maxBytes,
      signal: this.abort.signal,
    });
    const entries =
      typeof document === 'object' && document !== null && !Array.isArray(document)
        ? (document as { keys?: unknown }).keys
        : undefined;
    if (!Array.isArray(entries)) throw new JwksFetchError('the document has no "keys" array');
    const keys: VerificationKey[] = [];
    const keysById = new Map<string, VerificationKey>();
    for (const entry of entries) {
      const key = importJwk(entry, this.keyTypes);
      if (!key) continue;
      keys.push(key);
      // The first key with a given kid wins, as in document order.
      if (key.kid !== undefined && !keysById.has(key.kid)) keysById.set(key.kid, key);
    }
    this.keys = keys;
    this.keysById = keysById;
    this.loadedAt = this.now();
    const skipped = entries.length - keys.length;
    // Seed: "a document that looks populated can yield zero usable keys. Check the key count in
    // the boot log." The count is logged on every load, louder when it is zero.
    const fields = { setting: this.setting, url: redactUrl(this.url), keys: keys.length, skipped };
    if (keys.length === 0) this.logger.warn(fields, 'JWKS loaded 0 usable keys');
    else this.logger.info(fields, `JWKS loaded ${keys.length} usable keys`);
    return keys.length;
  }
}

function describe(error: unknown): string {
  return error instanceof JwksFetchError ? error.message : 'unexpected error';
}

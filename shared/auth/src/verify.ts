import { compactVerify, decodeProtectedHeader, errors as joseErrors } from 'jose';
import { algorithmFitsKey, isNoneAlgorithm, isSupportedAlgorithm, type JwsAlgorithm } from './algorithms.js';
import { AuthError } from './errors.js';
import type { VerificationKey } from './keys.js';
import { type AuthLogger, silentLogger } from './logger.js';
import { type TokenCacheOptions, VerifiedTokenCache } from './token-cache.js';

/** A token whose signature, algorithm, temporal and issuer/audience checks all passed. */
export interface VerifiedToken {
  readonly algorithm: JwsAlgorithm;
  readonly header: Readonly<Record<string, unknown>>;
  readonly payload: Readonly<Record<string, unknown>>;
  /** `exp` in milliseconds since the epoch; undefined when the token has no `exp`. */
  readonly expiresAt: number | undefined;
}

/**
 * Picks the key for a token whose algorithm already passed the allow-list. Throws an AuthError
 * when there is none (`unknown_kid`, `key_not_configured`, `invalid_key`, …). Never selects a key
 * from the token itself: `jwk`, `jku`, `x5u` and `x5c` header parameters are ignored, always.
 */
export type KeyResolver = (
  algorithm: JwsAlgorithm,
  kid: string | undefined,
) => VerificationKey | Promise<VerificationKey>;

export interface TokenVerifierOptions {
  /** The algorithms a token may declare (configuration decides, never the token). */
  readonly algorithms: readonly JwsAlgorithm[];
  readonly resolveKey: KeyResolver;
  /** Tolerance applied to `exp`, `nbf` and `iat`, in milliseconds. */
  readonly clockSkewMs?: number | undefined;
  /** When set, `iss` must be one of these. */
  readonly issuers?: readonly string[] | undefined;
  /** When set, `aud` (a string or an array) must contain one of these. */
  readonly audiences?: readonly string[] | undefined;
  /** Milliseconds since the epoch; injected by tests to put the clock on an edge. */
  readonly now?: (() => number) | undefined;
  readonly logger?: AuthLogger | undefined;
  /** Verified-token cache; `false` disables it (benchmarks measure the uncached path). */
  readonly cache?: TokenCacheOptions | false | undefined;
  /** Longer compact tokens are refused as malformed before any parsing. */
  readonly maxTokenLength?: number | undefined;
}

/** Enough for a Mercure token with many selectors; far beyond any sane header or cookie. */
export const DEFAULT_MAX_TOKEN_LENGTH = 64 * 1024;

const COMPACT_JWS = /^[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]*$/;

export class TokenVerifier {
  private readonly allowed: ReadonlySet<string>;
  private readonly resolveKey: KeyResolver;
  private readonly skewSeconds: number;
  private readonly issuers: ReadonlySet<string> | undefined;
  private readonly audiences: ReadonlySet<string> | undefined;
  private readonly now: () => number;
  private readonly logger: AuthLogger;
  private readonly cache: VerifiedTokenCache<VerifiedToken> | undefined;
  private readonly maxTokenLength: number;

  constructor(options: TokenVerifierOptions) {
    if (options.algorithms.length === 0) throw new TypeError('the algorithm allow-list is empty');
    this.allowed = new Set(options.algorithms);
    this.resolveKey = options.resolveKey;
    this.skewSeconds = (options.clockSkewMs ?? 0) / 1000;
    this.issuers = options.issuers?.length ? new Set(options.issuers) : undefined;
    this.audiences = options.audiences?.length ? new Set(options.audiences) : undefined;
    this.now = options.now ?? Date.now;
    this.logger = options.logger ?? silentLogger;
    this.cache = options.cache === false ? undefined : new VerifiedTokenCache(options.cache);
    this.maxTokenLength = options.maxTokenLength ?? DEFAULT_MAX_TOKEN_LENGTH;
  }

  get algorithms(): readonly string[] {
    return [...this.allowed];
  }

  /** Verifies a compact JWS. Resolves to the verified token or rejects with an AuthError. */
  async verify(token: string): Promise<VerifiedToken> {
    if (token.length === 0 || token.length > this.maxTokenLength || !COMPACT_JWS.test(token)) {
      throw new AuthError('malformed_token');
    }
    const cached = this.cache?.get(token, this.now());
    if (cached) {
      // The cache only skips the signature: time moves, so the temporal checks run again.
      this.checkTemporalClaims(cached.payload);
      return cached;
    }

    const header = decodeHeader(token);
    const algorithm = header.alg;
    // Order matters: `none` and anything off the allow-list are refused before a key is looked
    // up (seed: "rejected with 401 Unsupported token algorithm before any key lookup").
    if (isNoneAlgorithm(algorithm)) throw new AuthError('alg_none');
    if (!isSupportedAlgorithm(algorithm) || !this.allowed.has(algorithm)) {
      throw new AuthError('alg_not_allowed');
    }
    if (header.kid !== undefined && typeof header.kid !== 'string') {
      throw new AuthError('malformed_token');
    }
    const key = await this.resolveKey(algorithm, header.kid);
    // Algorithm confusion: the token's alg must suit the key's family (and the JWK's own `alg`
    // when it declares one) before the key is used at all (RFC 8725 §3.1).
    if (!algorithmFitsKey(algorithm, key.family) || (key.alg !== undefined && key.alg !== algorithm)) {
      throw new AuthError('alg_key_mismatch');
    }

    let payloadBytes: Uint8Array;
    try {
      ({ payload: payloadBytes } = await compactVerify(token, key.key, { algorithms: [algorithm] }));
    } catch (error) {
      throw mapJoseError(error);
    }
    const payload = parsePayload(payloadBytes);
    this.checkTemporalClaims(payload);
    this.checkIssuerAndAudience(payload);
    if (payload.exp === undefined) {
      // Both seeds accept a token without exp; it stays valid forever, so say so (auth.md).
      this.logger.debug({ alg: algorithm }, 'accepted a token without exp');
    }
    const verified: VerifiedToken = {
      algorithm,
      header,
      payload,
      expiresAt: typeof payload.exp === 'number' ? payload.exp * 1000 : undefined,
    };
    this.cache?.set(token, verified, this.now());
    return verified;
  }

  /**
   * exp, nbf and iat with the configured skew, on whole seconds as Queen does:
   * expired when now > exp + skew, not yet valid when now + skew < nbf, issued in the future
   * when iat > now + skew. Each claim is optional; a present one must be a number.
   */
  private checkTemporalClaims(payload: Readonly<Record<string, unknown>>): void {
    const nowSeconds = Math.floor(this.now() / 1000);
    const skew = this.skewSeconds;
    const { exp, nbf, iat } = payload;
    if (exp !== undefined && nowSeconds > (exp as number) + skew) throw new AuthError('expired');
    if (nbf !== undefined && nowSeconds + skew < (nbf as number)) throw new AuthError('not_yet_valid');
    if (iat !== undefined && (iat as number) > nowSeconds + skew) throw new AuthError('issued_in_future');
  }

  private checkIssuerAndAudience(payload: Readonly<Record<string, unknown>>): void {
    if (this.issuers && !(typeof payload.iss === 'string' && this.issuers.has(payload.iss))) {
      throw new AuthError('issuer');
    }
    if (this.audiences) {
      const audiences = this.audiences;
      const aud = payload.aud;
      const presented = typeof aud === 'string' ? [aud] : Array.isArray(aud) ? aud : [];
      if (!presented.some((value) => typeof value === 'string' && audiences.has(value))) {
        throw new AuthError('audience');
      }
    }
  }
}

export function createTokenVerifier(options: TokenVerifierOptions): TokenVerifier {
  return new TokenVerifier(options);
}

function decodeHeader(token: string): Record<string, unknown> & { alg?: unknown; kid?: unknown } {
  try {
    return decodeProtectedHeader(token) as Record<string, unknown>;
  } catch {
    throw new AuthError('malformed_token');
  }
}

const NUMERIC_DATE_CLAIMS = ['exp', 'nbf', 'iat'] as const;

function parsePayload(bytes: Uint8Array): Record<string, unknown> {
  let payload: unknown;
  try {
    payload = JSON.parse(new TextDecoder('utf-8', { fatal: true }).decode(bytes));
  } catch {
    throw new AuthError('malformed_token');
  }
  if (typeof payload !== 'object' || payload === null || Array.isArray(payload)) {
    throw new AuthError('malformed_token');
  }
  const claims = payload as Record<string, unknown>;
  for (const name of NUMERIC_DATE_CLAIMS) {
    const value = claims[name];
    // RFC 7519 NumericDate. A string "exp" must not silently mean "no expiry".
    if (value !== undefined && (typeof value !== 'number' || !Number.isFinite(value))) {
      throw new AuthError('invalid_claims');
    }
  }
  return claims;
}

function mapJoseError(error: unknown): AuthError {
  if (error instanceof joseErrors.JWSSignatureVerificationFailed) return new AuthError('bad_signature');
  if (error instanceof joseErrors.JOSEAlgNotAllowed) return new AuthError('alg_not_allowed');
  if (error instanceof joseErrors.JOSEError) return new AuthError('malformed_token');
  // jose throws TypeError for a key it will not use (e.g. an RSA modulus under 2048 bits):
  // the server's key is at fault, not the request.
  return new AuthError('invalid_key');
}

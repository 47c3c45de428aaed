import { ConfigError } from '@herald/config';
import type { JwsAlgorithm } from './algorithms.js';
import { AuthError, type AuthFailureReason, isAuthError } from './errors.js';
import { JwksCache } from './jwks.js';
import type { VerificationKey } from './keys.js';
import { type AuthLogger, silentLogger } from './logger.js';
import { type MercureClaims, parseMercureClaims } from './mercure-claims.js';
import {
  extractMercureToken,
  isSecureTransport,
  type TokenCarrier,
  type TokenSource,
  type TransportFacts,
  tokenSourceOf,
} from './mercure-request.js';
import {
  type MercureAuthConfig,
  type MercureRole,
  type MercureRoleKeys,
  resolveMercureRoleKeys,
} from './mercure-settings.js';
import { type RevocationCheck, revocableTokenOf } from './revocation.js';
import type { TokenCacheOptions } from './token-cache.js';
import { createTokenVerifier, type KeyResolver, type TokenVerifier, type VerifiedToken } from './verify.js';

export interface MercureAuthRequest extends TokenCarrier {
  readonly transport: TransportFacts;
}

export interface MercureAuthResult {
  /** Undefined for an anonymous request (no token); the hub decides whether that is allowed. */
  readonly claims?: MercureClaims | undefined;
  readonly source?: TokenSource | undefined;
  /** The token's `exp` in ms since the epoch: the hub closes a subscriber's stream then. */
  readonly expiresAt?: number | undefined;
  /** The token's `sub`, when a string (subscription event identifiers). */
  readonly subject?: string | undefined;
  /** The token's `jti`, when a string: the hub closes streams opened with a revoked one. */
  readonly tokenId?: string | undefined;
  /** The token's `iat` in seconds, when a number: a `sub` revocation covers tokens issued before its time. */
  readonly issuedAt?: number | undefined;
  /** The verified payload, for claims outside the Mercure grammar (the hub's `herald.admin`). */
  readonly payload?: Readonly<Record<string, unknown>> | undefined;
}

export interface MercureAuthenticatorOptions {
  /** The hub's public URL: base for relative URL patterns and topics in claims. */
  readonly hubUrl?: string | URL | undefined;
  readonly logger?: AuthLogger | undefined;
  /** Called with the reason of every refused request (for `mercure_auth_failures_total`). */
  readonly onFailure?: ((reason: AuthFailureReason) => void) | undefined;
  readonly now?: (() => number) | undefined;
  /** Tolerance on exp/nbf/iat; default 0, as the reference hub. */
  readonly clockSkewMs?: number | undefined;
  readonly cache?: TokenCacheOptions | false | undefined;
  readonly jwksTimeoutMs?: number | undefined;
  readonly jwksMaxAgeMs?: number | undefined;
  /**
   * The node's deny list (docs/security.md, "Revocation"): asked after verification on every
   * request, a verifier cache hit included, so a revocation applies to a token already cached.
   */
  readonly revocations?: RevocationCheck | undefined;
}

export interface MercureAuthenticator {
  /**
   * Authenticates a request for a role. Resolves `{}` when the request carries no token, and
   * the verified claims otherwise; rejects with an AuthError (an invalid token is always an
   * error, never a silent downgrade to anonymous).
   */
  authenticate(request: MercureAuthRequest, role: MercureRole): Promise<MercureAuthResult>;
  /** Resolves once the boot-time JWKS pre-fetches have settled (never rejects). */
  ready(): Promise<void>;
  close(): void;
  readonly cookieName: string;
}

/**
 * Builds the hub's authenticator from its parsed settings. Throws ConfigError at construction
 * for a bad key configuration (bad PEM, PEM with HS*, missing publisher key): a hub that cannot
 * verify publishers must not start.
 */
export function createMercureAuthenticator(
  config: MercureAuthConfig,
  options: MercureAuthenticatorOptions = {},
): MercureAuthenticator {
  const logger = options.logger ?? silentLogger;
  const cookieName = config.MERCURE_COOKIE_NAME;
  const baseUrl = options.hubUrl;
  const legacy = config.MERCURE_LEGACY_CLAIMS;

  const publisherKeys = resolveMercureRoleKeys(config, 'publisher');
  if (!publisherKeys) {
    throw new ConfigError(
      'MERCURE_PUBLISHER_JWT_KEY',
      'is required (or MERCURE_PUBLISHER_JWKS_URL): publishers must present a token',
    );
  }
  const subscriberKeys = resolveMercureRoleKeys(config, 'subscriber');
  if (!subscriberKeys) {
    logger.warn(
      {},
      'no subscriber key configured (MERCURE_SUBSCRIBER_JWT_KEY / MERCURE_SUBSCRIBER_JWKS_URL): requests carrying a subscriber token are refused with 401',
    );
  }
  if (legacy) {
    logger.warn({}, 'MERCURE_LEGACY_CLAIMS is on: 0.x bare-string claims are accepted (migration aid)');
  }

  // One cache per distinct JWKS URL: publisher and subscriber often share an identity provider.
  const jwksCaches = new Map<string, JwksCache>();
  const jwksFor = (url: URL, setting: string): JwksCache => {
    let cache = jwksCaches.get(url.href);
    if (!cache) {
      cache = new JwksCache({
        url,
        logger,
        keyTypes: ['RSA', 'EC', 'OKP'],
        now: options.now,
        timeoutMs: options.jwksTimeoutMs,
        maxAgeMs: options.jwksMaxAgeMs,
        setting,
      });
      jwksCaches.set(url.href, cache);
    }
    return cache;
  };

  const buildVerifier = (keys: MercureRoleKeys): TokenVerifier => {
    for (const note of keys.notes) logger.warn({ role: keys.role }, note);
    const { staticKey, jwksUrl } = keys;
    let resolveKey: KeyResolver;
    if (staticKey) {
      resolveKey = () => staticKey;
    } else if (jwksUrl) {
      const jwks = jwksFor(
        jwksUrl,
        keys.role === 'publisher' ? 'MERCURE_PUBLISHER_JWKS_URL' : 'MERCURE_SUBSCRIBER_JWKS_URL',
      );
      resolveKey = (alg, kid) => keyFromJwks(jwks, alg, kid);
    } else {
      throw new TypeError('role keys without a key source');
    }
    return createTokenVerifier({
      algorithms: keys.algorithms,
      resolveKey,
      clockSkewMs: options.clockSkewMs,
      issuers: config.MERCURE_JWT_ISSUERS,
      audiences: config.MERCURE_JWT_AUDIENCE ? [config.MERCURE_JWT_AUDIENCE] : undefined,
      now: options.now,
      logger,
      cache: options.cache,
    });
  };

  const verifiers: Record<MercureRole, TokenVerifier | undefined> = {
    publisher: buildVerifier(publisherKeys),
    subscriber: subscriberKeys ? buildVerifier(subscriberKeys) : undefined,
  };
  // Parsed claims per verified token object: a cache hit in the verifier returns the same
  // object, so reconnect storms skip claim parsing too.
  const claimsByToken = new WeakMap<VerifiedToken, MercureClaims>();
  const prefetches = [...jwksCaches.values()].map((cache) => cache.prefetch());

  const authenticate = async (request: MercureAuthRequest, role: MercureRole): Promise<MercureAuthResult> => {
    const source = tokenSourceOf(request, cookieName);
    if (source === undefined) return {};
    try {
      // HTTPS rule first: over an insecure transport the token is not read, let alone checked.
      if (!isSecureTransport(request.transport)) throw new AuthError('insecure_transport');
      const extracted = extractMercureToken(request, cookieName);
      if (!extracted) return {};
      const verifier = verifiers[role];
      // A token no configured key can verify is a bad token for this hub (401), not a server
      // fault: the client sent it, and a 5xx would page the operator for every such request
      // (issue #8: never a 5xx for client input). The boot warning above names the setting.
      if (!verifier)
        throw new AuthError('key_not_configured', 'No key is configured to verify this token', 401);
      const verified = await verifier.verify(extracted.token);
      const revocable = revocableTokenOf(verified.payload);
      if (options.revocations?.isRevoked(revocable)) throw new AuthError('revoked');
      let claims = claimsByToken.get(verified);
      if (!claims) {
        claims = parseMercureClaims(verified.payload, verified.header, { legacy, baseUrl });
        claimsByToken.set(verified, claims);
      }
      return {
        claims,
        source: extracted.source,
        expiresAt: verified.expiresAt,
        subject: revocable.sub,
        tokenId: revocable.jti,
        issuedAt: revocable.iat,
        payload: verified.payload,
      };
    } catch (error) {
      if (isAuthError(error)) {
        options.onFailure?.(error.reason);
        // Never the token: only what kind of failure, for which role, from which source.
        logger.info({ reason: error.reason, role, source }, 'Mercure token refused');
      }
      throw error;
    }
  };

  return {
    authenticate,
    ready: async () => {
      await Promise.all(prefetches);
    },
    close: () => {
      for (const cache of jwksCaches.values()) cache.close();
    },
    cookieName,
  };
}

async function keyFromJwks(
  jwks: JwksCache,
  alg: JwsAlgorithm,
  kid: string | undefined,
): Promise<VerificationKey> {
  const key = await jwks.keyFor(kid, alg);
  if (!key) throw new AuthError('unknown_kid');
  return key;
}

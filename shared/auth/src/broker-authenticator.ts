import { HMAC_ALGORITHMS, isHmacAlgorithm, type JwsAlgorithm, RSA_ALGORITHMS } from './algorithms.js';
import { type BrokerRoleNames, rolesFromClaims } from './broker-access.js';
import {
  type BrokerAuthConfig,
  type BrokerJwtAlgorithm,
  isBrokerJwtAlgorithm,
  validateBrokerAuthConfig,
} from './broker-settings.js';
import { AuthError } from './errors.js';
import { JwksCache } from './jwks.js';
import { importPublicKeyPem, importSecret, type VerificationKey } from './keys.js';
import { type AuthLogger, silentLogger } from './logger.js';
import { type RevocationCheck, revocableTokenOf } from './revocation.js';
import type { TokenCacheOptions } from './token-cache.js';
import { createTokenVerifier, type TokenVerifier } from './verify.js';

/** Who made a broker request. Empty (no sub, no roles) when auth is off or the route is public. */
export interface BrokerIdentity {
  /** The token's `sub`: the only source of `producerSub` on stored messages (seed). */
  readonly sub?: string | undefined;
  readonly roles: ReadonlySet<string>;
  readonly claims?: Readonly<Record<string, unknown>> | undefined;
}

export const EMPTY_IDENTITY: BrokerIdentity = Object.freeze({ roles: new Set<string>() });

/**
 * Seed, "Algorithms and auto-detection": what each `JWT_ALGORITHM` lets a token declare.
 * RS256 is the widest RSA setting (it also accepts RS384 and RS512); RS384 and RS512 are exact;
 * auto accepts the HS and RS families and EdDSA.
 */
export const BROKER_ACCEPTED_ALGORITHMS: Readonly<Record<BrokerJwtAlgorithm, readonly JwsAlgorithm[]>> = {
  HS256: ['HS256'],
  HS384: ['HS384'],
  HS512: ['HS512'],
  RS256: [...RSA_ALGORITHMS],
  RS384: ['RS384'],
  RS512: ['RS512'],
  EdDSA: ['EdDSA'],
  auto: [...HMAC_ALGORITHMS, ...RSA_ALGORITHMS, 'EdDSA'],
};

/** Seed's texts for server-side key problems: the request was well-formed, the server is not. */
const HS_SECRET_NOT_CONFIGURED = 'HS secret not configured';
const INVALID_RSA_PEM = 'invalid RSA public key PEM';
const INVALID_ED_PEM = 'invalid Ed public key PEM';

export interface BrokerAuthenticatorOptions {
  readonly logger?: AuthLogger | undefined;
  readonly now?: (() => number) | undefined;
  readonly cache?: TokenCacheOptions | false | undefined;
  /**
   * The node's deny list (docs/security.md, "Revocation"): asked after verification on every
   * request, a verifier cache hit included, so a revocation applies to a token already cached.
   */
  readonly revocations?: RevocationCheck | undefined;
}

export interface BrokerAuthenticator {
  /**
   * Verifies the Authorization header's token and returns the identity. Rejects with an
   * AuthError: 401 (missing/invalid token), 500 (server-side key problem). Access levels are
   * the caller's (`hasAccess`).
   */
  authenticate(authorization: string | readonly string[] | undefined): Promise<BrokerIdentity>;
  /** Resolves once the boot-time JWKS pre-fetch has settled (never rejects). */
  ready(): Promise<void>;
  close(): void;
  readonly roleNames: BrokerRoleNames;
}

/**
 * The token from an Authorization header: a `Bearer ` prefix is stripped case-insensitively and
 * a bare token is accepted (seed, "The token on the wire"). Undefined when there is none.
 */
export function bearerToken(authorization: string | readonly string[] | undefined): string | undefined {
  const header = typeof authorization === 'string' ? authorization : authorization?.[0];
  if (header === undefined) return undefined;
  const token = /^bearer /i.test(header) ? header.slice(7) : header;
  const trimmed = token.trim();
  return trimmed === '' ? undefined : trimmed;
}

/** A PEM parsed once, on first use; the outcome (key or failure) is kept. */
function lazyPem(pem: string, family: 'rsa' | 'ed25519', failure: string): () => VerificationKey {
  let outcome: VerificationKey | AuthError | undefined;
  return () => {
    if (!outcome) {
      try {
        const key = importPublicKeyPem(pem);
        outcome = key.family === family ? key : new AuthError('invalid_key', failure);
      } catch {
        outcome = new AuthError('invalid_key', failure);
      }
    }
    if (outcome instanceof AuthError) throw new AuthError(outcome.reason, outcome.message);
    return outcome;
  };
}

/** The family of a PEM the broker can verify with, or undefined when it is neither RSA nor Ed25519. */
function pemFamily(pem: string): 'rsa' | 'ed25519' | undefined {
  try {
    const { family } = importPublicKeyPem(pem);
    return family === 'rsa' || family === 'ed25519' ? family : undefined;
  } catch {
    return undefined;
  }
}

/**
 * What `JWT_ALGORITHM=auto` accepts in this deployment: each family documented for auto (docs/broker-configuration.md),
 * only where a key for it is configured. A token of a family with no key is the client's
 * mistake, refused with 401 `Unsupported token algorithm` before any key lookup (issue #8: an HS
 * token against a JWKS-only broker answered 500 `HS secret not configured` and logged an
 * error). An unreadable PEM keeps RS and EdDSA: that is the operator's fault, a 500 (seed),
 * already logged at boot.
 */
function autoAlgorithms(keys: {
  readonly secret: boolean;
  readonly publicKey: 'rsa' | 'ed25519' | 'unreadable' | undefined;
  readonly jwks: boolean;
}): readonly JwsAlgorithm[] {
  const fromJwks = keys.publicKey === undefined && keys.jwks;
  const unreadable = keys.publicKey === 'unreadable';
  return BROKER_ACCEPTED_ALGORITHMS.auto.filter((alg) => {
    if (isHmacAlgorithm(alg)) return keys.secret;
    if (alg === 'EdDSA') return fromJwks || unreadable || keys.publicKey === 'ed25519';
    return fromJwks || unreadable || keys.publicKey === 'rsa';
  });
}

/**
 * Builds the broker's token authenticator from validated settings (`validateBrokerAuthConfig`
 * runs again here, so an unvalidated config cannot slip through). Must not be used with
 * `JWT_ENABLED=false`: then there is nothing to verify and every request gets EMPTY_IDENTITY.
 */
export function createBrokerAuthenticator(
  config: BrokerAuthConfig,
  options: BrokerAuthenticatorOptions = {},
): BrokerAuthenticator {
  validateBrokerAuthConfig(config);
  const algorithm = config.JWT_ALGORITHM;
  if (!config.JWT_ENABLED || !isBrokerJwtAlgorithm(algorithm)) {
    throw new TypeError('createBrokerAuthenticator needs JWT_ENABLED=true');
  }
  const logger = options.logger ?? silentLogger;
  const secret = config.JWT_SECRET ? importSecret(config.JWT_SECRET) : undefined;
  const publicKey = config.JWT_PUBLIC_KEY;
  const publicKeyFamily = publicKey ? pemFamily(publicKey) : undefined;
  const accepted =
    algorithm === 'auto'
      ? autoAlgorithms({
          secret: secret !== undefined,
          publicKey: publicKey ? (publicKeyFamily ?? 'unreadable') : undefined,
          jwks: Boolean(config.JWT_JWKS_URL),
        })
      : BROKER_ACCEPTED_ALGORITHMS[algorithm];
  const rsaKey = publicKey ? lazyPem(publicKey, 'rsa', INVALID_RSA_PEM) : undefined;
  const edKey = publicKey ? lazyPem(publicKey, 'ed25519', INVALID_ED_PEM) : undefined;

  // Queen pre-fetches JWKS only when an asymmetric family can be accepted.
  const needsJwks = !publicKey && config.JWT_JWKS_URL && accepted.some((alg) => !isHmacAlgorithm(alg));
  const jwks = needsJwks
    ? new JwksCache({
        url: config.JWT_JWKS_URL as URL,
        logger,
        // Seed: "Only two key types are read. RSA … and OKP with crv: Ed25519".
        keyTypes: ['RSA', 'OKP'],
        now: options.now,
        timeoutMs: config.JWT_JWKS_TIMEOUT_MS,
        maxAgeMs: config.JWT_JWKS_REFRESH_INTERVAL,
        setting: 'JWT_JWKS_URL',
      })
    : undefined;
  if (publicKey) {
    // A PEM that is neither RSA nor Ed25519 fails every asymmetric request with 500 (seed: no
    // fallback to JWKS). Say so at boot rather than leave it to the first request.
    if (publicKeyFamily === undefined) {
      logger.error(
        { setting: 'JWT_PUBLIC_KEY' },
        'JWT_PUBLIC_KEY is not an RSA or Ed25519 public key PEM: RS*/EdDSA tokens will be refused with 500',
      );
    }
    if (config.JWT_JWKS_URL)
      logger.warn({ setting: 'JWT_JWKS_URL' }, 'JWT_JWKS_URL is ignored: JWT_PUBLIC_KEY takes precedence');
  }

  // Key per token family, chosen from the token's (already allow-listed) alg (seed, "Where the
  // verification key comes from").
  const resolveKey = async (alg: JwsAlgorithm, kid: string | undefined): Promise<VerificationKey> => {
    if (isHmacAlgorithm(alg)) {
      if (!secret) throw new AuthError('key_not_configured', HS_SECRET_NOT_CONFIGURED);
      return secret;
    }
    const staticKey = alg === 'EdDSA' ? edKey : rsaKey;
    if (staticKey) return staticKey();
    const key = jwks ? await jwks.keyFor(kid, alg) : undefined;
    if (!key) throw new AuthError('unknown_kid');
    return key;
  };

  const verifier: TokenVerifier = createTokenVerifier({
    algorithms: accepted,
    resolveKey,
    clockSkewMs: config.JWT_CLOCK_SKEW,
    issuers: config.JWT_ISSUER ? [config.JWT_ISSUER] : undefined,
    audiences: config.JWT_AUDIENCE ? [config.JWT_AUDIENCE] : undefined,
    now: options.now,
    logger,
    cache: options.cache,
  });
  const claimNames = { rolesClaim: config.JWT_ROLES_CLAIM, rolesArrayClaim: config.JWT_ROLES_ARRAY_CLAIM };
  const roleNames: BrokerRoleNames = {
    admin: config.JWT_ROLE_ADMIN,
    readWrite: config.JWT_ROLE_READ_WRITE,
    readOnly: config.JWT_ROLE_READ_ONLY,
    writeOnly: config.JWT_ROLE_WRITE_ONLY,
  };
  const prefetch = jwks ? jwks.prefetch() : Promise.resolve();

  return {
    async authenticate(authorization) {
      const token = bearerToken(authorization);
      if (token === undefined) throw new AuthError('missing_token');
      const verified = await verifier.verify(token);
      if (options.revocations?.isRevoked(revocableTokenOf(verified.payload))) throw new AuthError('revoked');
      const sub = verified.payload.sub;
      return {
        sub: typeof sub === 'string' && sub !== '' ? sub : undefined,
        roles: rolesFromClaims(verified.payload, claimNames),
        claims: verified.payload,
      };
    },
    ready: () => prefetch,
    close: () => jwks?.close(),
    roleNames,
  };
}

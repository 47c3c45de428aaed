import { boolean, ConfigError, type ConfigOf, enumOf, list, string, url } from '@herald/config';
import {
  ASYMMETRIC_ALGORITHMS,
  algorithmFitsKey,
  isHmacAlgorithm,
  type JwsAlgorithm,
  SUPPORTED_ALGORITHMS,
} from './algorithms.js';
import {
  describeKeyFamily,
  importPublicKeyPem,
  importSecret,
  isPemText,
  KeyImportError,
  type VerificationKey,
} from './keys.js';
import { DEFAULT_COOKIE_NAME } from './mercure-request.js';

/**
 * The hub's auth settings, a spec fragment the hub spreads into its own config spec
 * (`parseEnv({ ...httpSettings, ...mercureAuthSettings, … })`).
 *
 * - `MERCURE_*_JWT_KEY`: a value containing `-----BEGIN` is a PEM public key (RS*, ES*, EdDSA),
 *   anything else an HMAC secret used as raw bytes.
 * - `MERCURE_*_JWT_ALG`: default HS256 when a key is set. With only a JWKS URL and no ALG, any
 *   asymmetric algorithm the key set can verify is accepted (RS256/384/512, ES256/384/512,
 *   EdDSA); set ALG to pin one. (Optional in the spec so "unset" stays distinguishable.)
 * - `MERCURE_*_JWKS_URL`: used when no key is set (a static key always wins).
 * - `MERCURE_LEGACY_CLAIMS`: migration aid, off by default; accepts 0.x bare-string claims.
 * - `MERCURE_COOKIE_NAME`: default `mercureAuthorization`.
 * - `MERCURE_JWT_ISSUERS` (comma-separated) / `MERCURE_JWT_AUDIENCE`: the 1.0 `iss`/`aud`
 *   checks, off unless set; they apply to every token.
 */
export const mercureAuthSettings = {
  MERCURE_PUBLISHER_JWT_KEY: string(),
  MERCURE_PUBLISHER_JWT_ALG: enumOf(SUPPORTED_ALGORITHMS, { caseInsensitive: true }),
  MERCURE_PUBLISHER_JWKS_URL: url({ protocols: ['https:', 'http:'] }),
  MERCURE_SUBSCRIBER_JWT_KEY: string(),
  MERCURE_SUBSCRIBER_JWT_ALG: enumOf(SUPPORTED_ALGORITHMS, { caseInsensitive: true }),
  MERCURE_SUBSCRIBER_JWKS_URL: url({ protocols: ['https:', 'http:'] }),
  MERCURE_LEGACY_CLAIMS: boolean({ default: false }),
  MERCURE_COOKIE_NAME: string({ default: DEFAULT_COOKIE_NAME }),
  MERCURE_JWT_ISSUERS: list(),
  MERCURE_JWT_AUDIENCE: string(),
};

export type MercureAuthConfig = ConfigOf<typeof mercureAuthSettings>;

export type MercureRole = 'publisher' | 'subscriber';

/** How one role's tokens are verified, resolved from the settings at boot. */
export interface MercureRoleKeys {
  readonly role: MercureRole;
  readonly algorithms: readonly JwsAlgorithm[];
  /** A static secret or PEM key. */
  readonly staticKey?: VerificationKey | undefined;
  /** A JWKS URL, when no static key is set. */
  readonly jwksUrl?: URL | undefined;
  /** Notes for the boot log (an ignored JWKS URL, a short secret). */
  readonly notes: readonly string[];
}

const VARIABLES = {
  publisher: {
    key: 'MERCURE_PUBLISHER_JWT_KEY',
    alg: 'MERCURE_PUBLISHER_JWT_ALG',
    jwks: 'MERCURE_PUBLISHER_JWKS_URL',
  },
  subscriber: {
    key: 'MERCURE_SUBSCRIBER_JWT_KEY',
    alg: 'MERCURE_SUBSCRIBER_JWT_ALG',
    jwks: 'MERCURE_SUBSCRIBER_JWKS_URL',
  },
} as const;

/** RFC 7518 §3.2: an HMAC key should be at least as long as the hash output. */
const MIN_HMAC_SECRET_BYTES = 32;

/**
 * Resolves one role's verification setup, or undefined when the role has neither key nor JWKS.
 * Throws ConfigError (naming the variable) for any combination that cannot be right, in
 * particular a PEM key with an HS* algorithm: that is the algorithm-confusion configuration
 * (the public key would be used as an HMAC secret, and anyone holding it could sign tokens).
 */
export function resolveMercureRoleKeys(
  config: MercureAuthConfig,
  role: MercureRole,
): MercureRoleKeys | undefined {
  const names = VARIABLES[role];
  const keyText = role === 'publisher' ? config.MERCURE_PUBLISHER_JWT_KEY : config.MERCURE_SUBSCRIBER_JWT_KEY;
  const configuredAlg =
    role === 'publisher' ? config.MERCURE_PUBLISHER_JWT_ALG : config.MERCURE_SUBSCRIBER_JWT_ALG;
  const jwksUrl =
    role === 'publisher' ? config.MERCURE_PUBLISHER_JWKS_URL : config.MERCURE_SUBSCRIBER_JWKS_URL;
  const notes: string[] = [];

  if (keyText !== undefined) {
    if (jwksUrl) notes.push(`${names.jwks} is ignored: ${names.key} takes precedence`);
    if (isPemText(keyText)) {
      const algorithm = configuredAlg ?? 'HS256';
      if (isHmacAlgorithm(algorithm)) {
        throw new ConfigError(
          names.alg,
          `${names.key} holds a PEM key but the algorithm is ${algorithm}; set ${names.alg} to the key's algorithm (RS256, ES256, EdDSA, …)`,
        );
      }
      let key: VerificationKey;
      try {
        key = importPublicKeyPem(keyText);
      } catch (error) {
        const reason = error instanceof KeyImportError ? error.message : 'does not parse';
        throw new ConfigError(names.key, `invalid PEM public key: ${reason}`);
      }
      if (!algorithmFitsKey(algorithm, key.family)) {
        throw new ConfigError(
          names.alg,
          `${algorithm} cannot be verified with the ${describeKeyFamily(key.family)} key in ${names.key}`,
        );
      }
      return { role, algorithms: [algorithm], staticKey: key, notes };
    }
    const algorithm = configuredAlg ?? 'HS256';
    if (!isHmacAlgorithm(algorithm)) {
      throw new ConfigError(
        names.alg,
        `${algorithm} needs a PEM public key in ${names.key} (a value containing -----BEGIN), not a secret`,
      );
    }
    if (Buffer.byteLength(keyText, 'utf8') < MIN_HMAC_SECRET_BYTES) {
      notes.push(`${names.key} is shorter than ${MIN_HMAC_SECRET_BYTES} bytes: brute-forceable`);
    }
    return { role, algorithms: [algorithm], staticKey: importSecret(keyText), notes };
  }

  if (jwksUrl) {
    if (configuredAlg !== undefined && isHmacAlgorithm(configuredAlg)) {
      throw new ConfigError(
        names.alg,
        `${configuredAlg} needs a secret in ${names.key}; a JWKS serves public keys only`,
      );
    }
    return {
      role,
      algorithms: configuredAlg ? [configuredAlg] : [...ASYMMETRIC_ALGORITHMS],
      jwksUrl,
      notes,
    };
  }
  if (configuredAlg !== undefined) {
    throw new ConfigError(names.key, `is required when ${names.alg} is set (or set ${names.jwks})`);
  }
  return undefined;
}

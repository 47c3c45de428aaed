/**
 * JWS algorithms we verify, and the key family each one needs.
 *
 * The allow-list is always decided by configuration, never by the token (RFC 8725 §3.1,
 * auth.md "Algorithms are an allow-list"). The family check is what stops algorithm
 * confusion: an HS256 token must never be verified with an RSA/EC/OKP public key, whatever
 * bytes the attacker used as the HMAC secret.
 */
export const HMAC_ALGORITHMS = ['HS256', 'HS384', 'HS512'] as const;
export const RSA_ALGORITHMS = ['RS256', 'RS384', 'RS512'] as const;
export const EC_ALGORITHMS = ['ES256', 'ES384', 'ES512'] as const;
export const EDDSA_ALGORITHMS = ['EdDSA'] as const;

export const ASYMMETRIC_ALGORITHMS = [...RSA_ALGORITHMS, ...EC_ALGORITHMS, ...EDDSA_ALGORITHMS] as const;

export const SUPPORTED_ALGORITHMS = [...HMAC_ALGORITHMS, ...ASYMMETRIC_ALGORITHMS] as const;

export type HmacAlgorithm = (typeof HMAC_ALGORITHMS)[number];
export type AsymmetricAlgorithm = (typeof ASYMMETRIC_ALGORITHMS)[number];
export type JwsAlgorithm = (typeof SUPPORTED_ALGORITHMS)[number];

/**
 * What kind of key verifies a token. EC keys carry their curve because ES256/384/512 are each
 * bound to one curve (RFC 7518 §3.4): a P-384 key must not verify an ES256 token.
 */
export type KeyFamily = 'hmac' | 'rsa' | 'ec-p256' | 'ec-p384' | 'ec-p521' | 'ed25519';

const FAMILY_OF_ALGORITHM: Readonly<Record<JwsAlgorithm, KeyFamily>> = {
  HS256: 'hmac',
  HS384: 'hmac',
  HS512: 'hmac',
  RS256: 'rsa',
  RS384: 'rsa',
  RS512: 'rsa',
  ES256: 'ec-p256',
  ES384: 'ec-p384',
  ES512: 'ec-p521',
  EdDSA: 'ed25519',
};

export function isSupportedAlgorithm(alg: unknown): alg is JwsAlgorithm {
  return typeof alg === 'string' && Object.hasOwn(FAMILY_OF_ALGORITHM, alg);
}

export function isHmacAlgorithm(alg: string): alg is HmacAlgorithm {
  return (HMAC_ALGORITHMS as readonly string[]).includes(alg);
}

/** The key family an algorithm needs. */
export function keyFamilyOf(alg: JwsAlgorithm): KeyFamily {
  return FAMILY_OF_ALGORITHM[alg];
}

/** True when a key of `family` may verify a token declaring `alg`. */
export function algorithmFitsKey(alg: JwsAlgorithm, family: KeyFamily): boolean {
  return FAMILY_OF_ALGORITHM[alg] === family;
}

/** `none` in any spelling: refused before anything else (RFC 8725 §2.1). */
export function isNoneAlgorithm(alg: unknown): boolean {
  return typeof alg === 'string' && alg.toLowerCase() === 'none';
}

import { createPublicKey, createSecretKey, type KeyObject } from 'node:crypto';
import type { KeyFamily } from './algorithms.js';

/**
 * A key ready to verify signatures, tagged with its family so the verifier can refuse a token
 * whose `alg` belongs to another family before the key is ever used (algorithm confusion).
 */
export interface VerificationKey {
  readonly key: KeyObject;
  readonly family: KeyFamily;
  /** From a JWK set: the key's `kid`, when it has one. */
  readonly kid?: string | undefined;
  /** From a JWK set: the key's `alg` member, when present (RFC 7517 §4.4: the key is for that alg only). */
  readonly alg?: string | undefined;
}

/**
 * A key import failure. The message is fixed text naming what was wrong, never the key bytes
 * or the crypto library's error (which can quote the input).
 */
export class KeyImportError extends Error {
  override readonly name = 'KeyImportError';
}

/** A configuration value is a PEM document when it contains a PEM armour line (auth contract). */
export function isPemText(value: string): boolean {
  return value.includes('-----BEGIN');
}

/**
 * PEM values often reach the environment with their newlines escaped as the two characters
 * `\n` (Docker env files, Helm `--set`, CI secrets). Undo that when the value has no real
 * newline, so the operator does not have to.
 */
export function normalizePem(value: string): string {
  const unescaped = value.includes('\n') ? value : value.replaceAll('\\n', '\n');
  return unescaped.trim();
}

/** PEM labels accepted for a verification key: public keys and certificates, never private keys. */
const PUBLIC_PEM_LABELS = new Set(['PUBLIC KEY', 'RSA PUBLIC KEY', 'CERTIFICATE']);

const CURVE_FAMILIES: Readonly<Record<string, KeyFamily>> = {
  prime256v1: 'ec-p256',
  secp384r1: 'ec-p384',
  secp521r1: 'ec-p521',
};

/** RFC 7518 §3.3 (and jose): RSA keys for RS* must be at least 2048 bits. */
export const MIN_RSA_MODULUS_BITS = 2048;

/** The family of an imported asymmetric key, or undefined for one we do not verify with. */
export function familyOfKeyObject(key: KeyObject): KeyFamily | undefined {
  if (key.type === 'secret') return 'hmac';
  switch (key.asymmetricKeyType) {
    // RSASSA-PSS-only keys (`rsa-pss`) are deliberately absent: we verify RS* (PKCS#1 v1.5).
    // A short modulus is refused here rather than at every verification.
    case 'rsa':
      return (key.asymmetricKeyDetails?.modulusLength ?? 0) >= MIN_RSA_MODULUS_BITS ? 'rsa' : undefined;
    case 'ec':
      return CURVE_FAMILIES[key.asymmetricKeyDetails?.namedCurve ?? ''];
    case 'ed25519':
      return 'ed25519';
    default:
      return undefined;
  }
}

const FAMILY_NAMES: Readonly<Record<KeyFamily, string>> = {
  hmac: 'HMAC secret',
  rsa: 'RSA',
  'ec-p256': 'EC P-256',
  'ec-p384': 'EC P-384',
  'ec-p521': 'EC P-521',
  ed25519: 'Ed25519',
};

export function describeKeyFamily(family: KeyFamily): string {
  return FAMILY_NAMES[family];
}

/**
 * Parses a PEM public key (SPKI, PKCS#1 RSA, or an X.509 certificate). A private key is
 * refused even though a public key could be derived from it: a private key in a "public key"
 * setting is a leaked secret, and Queen's parser refuses it too.
 */
export function importPublicKeyPem(pemText: string): VerificationKey {
  const pem = normalizePem(pemText);
  const labels = [...pem.matchAll(/-----BEGIN ([A-Z0-9 ]+)-----/g)].map((match) => match[1]);
  const [label] = labels;
  if (label === undefined) throw new KeyImportError('not a PEM document');
  if (!PUBLIC_PEM_LABELS.has(label)) {
    throw new KeyImportError(
      label.includes('PRIVATE')
        ? 'a private key was given where a public key is expected'
        : `unsupported PEM type ${label}`,
    );
  }
  let key: KeyObject;
  try {
    key = createPublicKey(pem);
  } catch {
    throw new KeyImportError('the PEM document does not parse as a public key');
  }
  const family = familyOfKeyObject(key);
  if (!family) {
    throw new KeyImportError(
      'unsupported public key type (need RSA of at least 2048 bits, EC P-256/384/521 or Ed25519)',
    );
  }
  return { key, family };
}

/** An HMAC secret used as raw bytes (seed: "JWT_SECRET, used as raw bytes"). */
export function importSecret(secret: string | Uint8Array): VerificationKey {
  const bytes = typeof secret === 'string' ? Buffer.from(secret, 'utf8') : secret;
  return { key: createSecretKey(bytes), family: 'hmac' };
}

export type JwkKeyType = 'RSA' | 'EC' | 'OKP';

const EC_CURVES: Readonly<Record<string, KeyFamily>> = {
  'P-256': 'ec-p256',
  'P-384': 'ec-p384',
  'P-521': 'ec-p521',
};

/**
 * Reads one entry of a JWK set. Returns undefined for an entry we skip: a key type not in
 * `keyTypes`, an encryption key (`use: enc`), an unsupported curve, or malformed members.
 * Only public members are passed to the importer, so a JWKS that wrongly publishes private
 * parts still yields a public key and nothing secret is kept.
 */
export function importJwk(entry: unknown, keyTypes: ReadonlySet<JwkKeyType>): VerificationKey | undefined {
  if (typeof entry !== 'object' || entry === null || Array.isArray(entry)) return undefined;
  const jwk = entry as Record<string, unknown>;
  const kty = jwk.kty;
  if (kty !== 'RSA' && kty !== 'EC' && kty !== 'OKP') return undefined;
  if (!keyTypes.has(kty)) return undefined;
  if (jwk.use !== undefined && jwk.use !== 'sig') return undefined;
  const kid = typeof jwk.kid === 'string' && jwk.kid !== '' ? jwk.kid : undefined;
  const alg = typeof jwk.alg === 'string' ? jwk.alg : undefined;

  let publicMembers: Record<string, string>;
  let family: KeyFamily;
  if (kty === 'RSA') {
    if (typeof jwk.n !== 'string' || typeof jwk.e !== 'string') return undefined;
    publicMembers = { kty, n: jwk.n, e: jwk.e };
    family = 'rsa';
  } else if (kty === 'EC') {
    const curveFamily = typeof jwk.crv === 'string' ? EC_CURVES[jwk.crv] : undefined;
    if (!curveFamily || typeof jwk.x !== 'string' || typeof jwk.y !== 'string') return undefined;
    publicMembers = { kty, crv: jwk.crv as string, x: jwk.x, y: jwk.y };
    family = curveFamily;
  } else {
    // OKP: Ed25519 only (seed: "OKP with crv: Ed25519 (from the raw 32-byte x)").
    if (jwk.crv !== 'Ed25519' || typeof jwk.x !== 'string') return undefined;
    if (Buffer.from(jwk.x, 'base64url').length !== 32) return undefined;
    publicMembers = { kty, crv: 'Ed25519', x: jwk.x };
    family = 'ed25519';
  }
  try {
    const key = createPublicKey({ key: publicMembers, format: 'jwk' });
    // Re-derive the family from the imported key: a garbage or short RSA modulus is skipped.
    return familyOfKeyObject(key) === family ? { key, family, kid, alg } : undefined;
  } catch {
    return undefined;
  }
}

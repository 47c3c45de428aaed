import { readFileSync } from 'node:fs';
import { importPKCS8, type JWTPayload, SignJWT } from 'jose';

type SigningKey = Awaited<ReturnType<typeof importPKCS8>> | Uint8Array;

export class TokenOptionsError extends Error {}

export interface TokenOptions {
  readonly secret?: string;
  readonly key?: string;
  readonly alg?: string;
  readonly publish?: string[];
  readonly subscribe?: string[];
  readonly 'match-type'?: string;
  readonly payload?: string;
  readonly role?: string[];
  readonly sub?: string;
  readonly jti?: string;
  readonly 'hub-admin'?: boolean;
  readonly exp?: string;
}

const MATCH_TYPES = ['exact', 'urlpattern', 'regexp', 'uritemplate'];
const HMAC = ['HS256', 'HS384', 'HS512'];
const ASYMMETRIC = ['RS256', 'RS384', 'RS512', 'ES256', 'ES384', 'ES512', 'EdDSA'];

function selectors(matches: string[] | undefined, matchType: string | undefined) {
  return matches?.map((match) => (matchType ? { match, matchType } : { match }));
}

/** Claims for a hub (`mercure`) and/or broker (`roles`, `sub`) token. */
export function tokenClaims(options: TokenOptions, now = Date.now()): JWTPayload {
  const matchType = options['match-type'];
  if (matchType && !MATCH_TYPES.includes(matchType.toLowerCase())) {
    throw new TokenOptionsError(`--match-type must be one of Exact, URLPattern, Regexp, URITemplate`);
  }
  const claims: JWTPayload = {};
  const publish = selectors(options.publish, matchType);
  const subscribe = selectors(options.subscribe, matchType);
  if (publish || subscribe || options.payload !== undefined) {
    const mercure: Record<string, unknown> = {};
    if (publish) mercure.publish = publish;
    if (subscribe) mercure.subscribe = subscribe;
    if (options.payload !== undefined) {
      try {
        mercure.payload = JSON.parse(options.payload);
      } catch {
        throw new TokenOptionsError('--payload must be JSON');
      }
    }
    claims.mercure = mercure;
  }
  if (options.role) claims.roles = options.role;
  if (options.sub !== undefined) claims.sub = options.sub;
  if (options.jti !== undefined) claims.jti = options.jti;
  // The hub's admin routes (docs/security.md, "Revocation") ask for this on a publisher-key token.
  if (options['hub-admin']) claims.herald = { admin: true };
  if (options.exp !== undefined) {
    if (!/^\d+$/.test(options.exp) || Number(options.exp) <= 0) {
      throw new TokenOptionsError('--exp takes a lifetime in whole seconds');
    }
    claims.exp = Math.floor(now / 1000) + Number(options.exp);
  }
  return claims;
}

async function signingKey(options: TokenOptions): Promise<{ key: SigningKey; algorithm: string }> {
  if (options.secret !== undefined && options.key !== undefined) {
    throw new TokenOptionsError('give --secret or --key, not both');
  }
  if (options.secret !== undefined) {
    const algorithm = options.alg ?? 'HS256';
    if (!HMAC.includes(algorithm)) throw new TokenOptionsError(`--secret signs with ${HMAC.join(', ')}`);
    if (options.secret === '') throw new TokenOptionsError('--secret must not be empty');
    return { key: new TextEncoder().encode(options.secret), algorithm };
  }
  if (options.key !== undefined) {
    const algorithm = options.alg ?? 'RS256';
    if (!ASYMMETRIC.includes(algorithm))
      throw new TokenOptionsError(`--key signs with ${ASYMMETRIC.join(', ')}`);
    let pem: string;
    try {
      pem = readFileSync(options.key, 'utf8');
    } catch {
      throw new TokenOptionsError(`cannot read key file ${options.key}`);
    }
    try {
      return { key: await importPKCS8(pem, algorithm), algorithm };
    } catch {
      throw new TokenOptionsError(`${options.key} is not a PKCS#8 private key PEM usable with ${algorithm}`);
    }
  }
  throw new TokenOptionsError('give --secret <s> or --key <private PEM file>');
}

export async function mintToken(options: TokenOptions) {
  const claims = tokenClaims(options);
  const { key, algorithm } = await signingKey(options);
  const token = await new SignJWT(claims).setProtectedHeader({ alg: algorithm, typ: 'JWT' }).sign(key);
  return { token, claims, algorithm };
}

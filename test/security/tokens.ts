import { createHmac, createSign, generateKeyPairSync, type KeyObject } from 'node:crypto';

const base64url = (value: string | Buffer) => Buffer.from(value).toString('base64url');

export interface Jws {
  readonly header: Record<string, unknown>;
  readonly payload: Record<string, unknown>;
}

/** A JWS with any header, signed with HMAC-SHA256 over whatever `alg` the header claims. */
export function hmacToken({ header, payload }: Jws, secret: string | Buffer): string {
  const signingInput = `${base64url(JSON.stringify({ typ: 'JWT', ...header }))}.${base64url(JSON.stringify(payload))}`;
  return `${signingInput}.${createHmac('sha256', secret).update(signingInput).digest('base64url')}`;
}

/** An RS256 JWS. */
export function rsaToken({ header, payload }: Jws, key: KeyObject): string {
  const signingInput = `${base64url(JSON.stringify({ typ: 'JWT', alg: 'RS256', ...header }))}.${base64url(JSON.stringify(payload))}`;
  return `${signingInput}.${createSign('RSA-SHA256').update(signingInput).sign(key).toString('base64url')}`;
}

/** `alg: none`, no signature (RFC 7519 §6 unsecured JWT). */
export function unsecuredToken(payload: Record<string, unknown>): string {
  return `${base64url(JSON.stringify({ alg: 'none', typ: 'JWT' }))}.${base64url(JSON.stringify(payload))}.`;
}

/** The token with its signature removed (header and payload kept, trailing dot kept). */
export function stripSignature(token: string): string {
  return token.slice(0, token.lastIndexOf('.') + 1);
}

export function rsaKeyPair(): { privateKey: KeyObject; publicKey: KeyObject; publicPem: string } {
  const { privateKey, publicKey } = generateKeyPairSync('rsa', { modulusLength: 2048 });
  return { privateKey, publicKey, publicPem: publicKey.export({ type: 'spki', format: 'pem' }).toString() };
}

export const nowSeconds = () => Math.floor(Date.now() / 1000);

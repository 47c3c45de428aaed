import type { MercureClaims, TokenSource } from '@herald/auth';

/** A verified token: its Mercure claims, where it came from, when it expires, what names it. */
export interface Principal {
  readonly claims: MercureClaims;
  readonly tokenSource: TokenSource;
  /** Milliseconds since the epoch; undefined for a token without `exp`. */
  readonly expiresAt: number | undefined;
  /** `jti`, `sub` and `iat` (seconds): what a revocation names (docs/security.md, "Revocation"). */
  readonly tokenId: string | undefined;
  readonly subject: string | undefined;
  readonly issuedAt: number | undefined;
  /** The token carries `"herald": {"admin": true}` (admin.ts; only publisher tokens are asked). */
  readonly admin: boolean;
}

import type { MercureClaims, TokenSource } from '@herald/auth';

/** A verified token: its Mercure claims, where it came from, when it expires. */
export interface Principal {
  readonly claims: MercureClaims;
  readonly tokenSource: TokenSource;
  /** Milliseconds since the epoch; undefined for a token without `exp`. */
  readonly expiresAt: number | undefined;
}

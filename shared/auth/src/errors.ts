import { HeraldError } from '@herald/errors';

/**
 * Every way authentication or authorization can fail, in one place (fastify's `FST_ERR_*`
 * registry, bullmq's `classes/errors`). Each service maps an AuthError to its own wire shape
 * (the broker's `{"error": …}`, the hub's plain-text bodies) at its edge.
 *
 * The `reason` is the stable label for logs and the `*_auth_failures_total{reason}` metrics;
 * the `message` is what a client may see. Messages are fixed strings chosen here: they never
 * carry key material, token contents, library error text or stack traces (auth.md, "Errors").
 */
export type AuthFailureReason =
  | 'missing_token'
  | 'malformed_token'
  | 'alg_none'
  | 'alg_not_allowed'
  | 'alg_key_mismatch'
  | 'bad_signature'
  | 'expired'
  | 'revoked'
  | 'not_yet_valid'
  | 'issued_in_future'
  | 'issuer'
  | 'audience'
  | 'unknown_kid'
  | 'invalid_claims'
  | 'ambiguous_claims'
  | 'insecure_transport'
  | 'key_not_configured'
  | 'invalid_key'
  | 'forbidden'
  | 'unsupported_matcher'
  | 'invalid_pattern';

export type AuthErrorStatus = 400 | 401 | 403 | 500 | 501;

interface ReasonDefaults {
  readonly status: AuthErrorStatus;
  readonly message: string;
}

/**
 * Default status and public text per reason. The broker's texts are Queen's
 * (`Unsupported token algorithm`, `Unknown key ID`, `Insufficient permissions`, …) so existing
 * clients that match on them keep working.
 */
const DEFAULTS: Readonly<Record<AuthFailureReason, ReasonDefaults>> = {
  missing_token: { status: 401, message: 'Authentication required' },
  malformed_token: { status: 401, message: 'Malformed token' },
  alg_none: { status: 401, message: 'Unsupported token algorithm' },
  alg_not_allowed: { status: 401, message: 'Unsupported token algorithm' },
  alg_key_mismatch: { status: 401, message: 'Token algorithm does not match the verification key' },
  bad_signature: { status: 401, message: 'Invalid token signature' },
  expired: { status: 401, message: 'Token has expired' },
  // A deny-list entry covers it (revocation.ts; docs/security.md, "Revocation").
  revoked: { status: 401, message: 'Token has been revoked' },
  not_yet_valid: { status: 401, message: 'Token not yet valid' },
  issued_in_future: { status: 401, message: 'Token issued in the future' },
  issuer: { status: 401, message: 'Invalid token issuer' },
  audience: { status: 401, message: 'Invalid token audience' },
  unknown_kid: { status: 401, message: 'Unknown key ID' },
  invalid_claims: { status: 401, message: 'Invalid token claims' },
  ambiguous_claims: {
    status: 401,
    message: 'Token carries both the mercure claim and authorization_details: use one grammar',
  },
  insecure_transport: {
    status: 400,
    // Names the fixes (issue #13): the hub's HTTPS rule is what a first curl on localhost meets.
    message:
      'Authorization tokens are only accepted over HTTPS: serve TLS (TLS_CERT_FILE, TLS_KEY_FILE), or trust the proxy that terminates it (TRUSTED_PROXIES); on localhost in development, MERCURE_DEV=1 accepts loopback',
  },
  key_not_configured: { status: 500, message: 'Verification key not configured' },
  invalid_key: { status: 500, message: 'Verification key is invalid' },
  forbidden: { status: 403, message: 'Insufficient permissions' },
  unsupported_matcher: { status: 501, message: 'Unsupported topic matcher type' },
  invalid_pattern: { status: 400, message: 'Invalid topic matcher pattern' },
};

/** `HERALD_AUTH_<REASON>`: the code scheme of `@herald/errors` (docs/contracts.md, "Errors"). */
export type AuthErrorCode = `HERALD_AUTH_${Uppercase<AuthFailureReason>}`;

/**
 * Its `message` is public by construction (fixed strings, above), so it is exposed at every
 * status, the 500s of a misconfigured key included.
 */
export class AuthError extends HeraldError {
  override readonly name = 'AuthError';
  declare readonly code: AuthErrorCode;
  /** The HTTP status, as `statusCode`; kept under this name for the services that read it. */
  readonly status: AuthErrorStatus;

  /**
   * @param reason  stable label for logs and metrics
   * @param message public text; pass only fixed strings, never anything derived from the token,
   *                the key or an underlying library's error
   */
  constructor(
    readonly reason: AuthFailureReason,
    message?: string,
    status?: AuthErrorStatus,
  ) {
    const defaults = DEFAULTS[reason];
    const statusCode = status ?? defaults.status;
    super(codeFor(reason), statusCode, message ?? defaults.message, { expose: true });
    this.status = statusCode;
  }

  /** The wire body both services can use as is: `{"error": "<public message>"}`. */
  toJSON(): { error: string } {
    return { error: this.message };
  }
}

function codeFor(reason: AuthFailureReason): AuthErrorCode {
  return `HERALD_AUTH_${reason.toUpperCase()}` as AuthErrorCode;
}

export function isAuthError(error: unknown): error is AuthError {
  return error instanceof AuthError;
}

export const AUTH_FAILURE_REASONS: readonly AuthFailureReason[] = Object.keys(
  DEFAULTS,
) as AuthFailureReason[];

/**
 * The token deny list holds its maximum of entries (docs/security.md, "Revocation"): an admin
 * write refused with 409 until entries are deleted or expire. Raised by each service's admin
 * route when its store reports the list full.
 */
export class RevocationsFullError extends HeraldError {
  override readonly name = 'RevocationsFullError';
  constructor(limit: number) {
    super(
      'HERALD_AUTH_REVOCATIONS_FULL',
      409,
      `The revocation list is full (${limit} entries): delete entries or wait for them to expire`,
    );
  }
}

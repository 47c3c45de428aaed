import { HeraldError, type HeraldErrorOptions } from '@herald/errors';
import { asRedisUnavailable } from '@herald/redis';

/** RFC 6750 §3.1 error codes, carried by the errors that answer with a challenge (challenge.ts). */
export type BearerErrorCode = 'invalid_request' | 'invalid_token' | 'insufficient_scope';

export interface HubErrorOptions extends HeraldErrorOptions {
  /** Label of `mercure_auth_failures_total{reason}` when this is an auth failure. */
  readonly authReason?: string;
  /**
   * The `WWW-Authenticate: Bearer` challenge this error carries (challenge.ts): `null` for the
   * bare one, undefined for none.
   */
  readonly bearerError?: BearerErrorCode | null;
}

/**
 * The hub's typed errors: a `HERALD_HUB_*` code and an HTTP status (`@herald/errors`; codes in
 * docs/contracts.md, "Errors"), mapped to the wire in one place (the error handler in
 * hub-routes.ts, `sendError`). A 4xx message is shown to the client; a 5xx one only when it is a fixed text
 * written for clients (`expose: true`). Never key material or compiler output.
 */
export class HubError extends HeraldError {
  override readonly name = 'HubError';
  readonly authReason: string | undefined;
  readonly bearerError: BearerErrorCode | null | undefined;
  constructor(
    code: `HERALD_HUB_${string}`,
    statusCode: number,
    message: string,
    { authReason, bearerError, ...options }: HubErrorOptions = {},
  ) {
    super(code, statusCode, message, options);
    this.authReason = authReason;
    this.bearerError = bearerError;
  }
}

export const missingMatcher = () =>
  new HubError('HERALD_HUB_NO_MATCHER', 400, 'Missing "match" (or "topic") query parameter');
/** `?topic=` (Mercure 0.x) on a hub that does not read it: say what to use instead. */
export const legacyTopicParameter = () =>
  new HubError(
    'HERALD_HUB_NO_MATCHER',
    400,
    'The "topic" query parameter is Mercure 0.x: subscribe with "match" (e.g. ?match=https://example.com/books/1), or set MERCURE_LEGACY_CLAIMS=1 on the hub to accept "topic"',
  );
export const tooManyMatchers = (limit: number) =>
  new HubError('HERALD_HUB_TOO_MANY_MATCHERS', 400, `Too many matchers (at most ${limit})`);
export const patternTooLong = (limit: number) =>
  new HubError('HERALD_HUB_PATTERN_TOO_LONG', 400, `Matcher too long (at most ${limit} bytes)`);
export const matchersTooComplex = (limit: number) =>
  new HubError(
    'HERALD_HUB_MATCHERS_TOO_COMPLEX',
    400,
    `The matchers of one subscription compile to more than ${limit} instructions; use fewer or simpler patterns`,
  );
/** A fixed text about the client's own request: shown although the status is a 5xx. */
export const unsupportedMatchType = () =>
  new HubError('HERALD_HUB_UNSUPPORTED_MATCH_TYPE', 501, 'Unsupported matcher type', { expose: true });
export const invalidField = (message: string) => new HubError('HERALD_HUB_INVALID_FIELD', 400, message);
/** A valid token that does not allow the operation (RFC 6750 `insufficient_scope`). */
export const forbidden = (message = 'Forbidden', reason = 'forbidden') =>
  new HubError('HERALD_HUB_FORBIDDEN', 403, message, {
    authReason: reason,
    bearerError: 'insufficient_scope',
  });
/** No credentials where some are required: the bare challenge (RFC 6750 §3.1, no error code). */
export const unauthorized = (message = 'Unauthorized', reason = 'missing_token') =>
  new HubError('HERALD_HUB_UNAUTHORIZED', 401, message, { authReason: reason, bearerError: null });
/** A cookie-authenticated publish without Origin or Referer (CSRF rule): a malformed presentation. */
export const originRequired = () =>
  new HubError(
    'HERALD_HUB_ORIGIN_REQUIRED',
    400,
    'A cookie-authenticated publish request must carry an Origin or Referer header',
    { authReason: 'csrf', bearerError: 'invalid_request' },
  );
/** A cookie-authenticated publish from an origin that may not publish with a cookie (CSRF rule). */
export const originRefused = (message: string) =>
  new HubError('HERALD_HUB_ORIGIN_REFUSED', 403, message, {
    authReason: 'csrf',
    bearerError: 'insufficient_scope',
  });
/** A fixed text written for clients (retry on another node): exposed. */
export const draining = () =>
  new HubError('HERALD_HUB_DRAINING', 503, 'This node is shutting down; retry elsewhere', { expose: true });
/**
 * The backend could not serve the request (`TransportUnavailableError`): a fixed text written for
 * clients, exposed; the transport's own message, which names internals, is the `cause` (logs only).
 */
const backendUnavailable = (cause?: unknown) =>
  new HubError('HERALD_HUB_BACKEND_UNAVAILABLE', 503, 'The update backend is unavailable; retry later', {
    expose: true,
    ...(cause === undefined ? {} : { cause }),
  });
export const notFound = () => new HubError('HERALD_HUB_NOT_FOUND', 404, 'Not Found');

/**
 * The transport could not do what was asked (Redis unreachable, no reply in time): the outcome of
 * a publish is then "not done, retry" (docs/hub.md, resent publishes), and a read may be retried.
 * Not an HTTP error: the edge maps it (`asHubError`), and its message, which may name internals,
 * stays in the logs.
 */
export class TransportUnavailableError extends Error {
  override readonly name = 'TransportUnavailableError';
  /** For logs (`loggableError` keeps it); the code scheme of docs/contracts.md. */
  readonly code = 'HERALD_HUB_TRANSPORT_UNAVAILABLE';
}

/**
 * The HTTP form of an error a handler let through: a transport failure, or a Redis failure that
 * means "could not serve it" (`asRedisUnavailable`, never a match on its text here), becomes the
 * 503 with the fixed text; the failure is its cause.
 */
export function asHubError(error: unknown): unknown {
  if (error instanceof TransportUnavailableError || asRedisUnavailable(error))
    return backendUnavailable(error);
  return error;
}

/** A stream or a publish over its tenant's limit (limits.ts): nothing was opened or stored. */
export const limitExceeded = (message: string, retryAfterMs: number) =>
  new HubError('HERALD_HUB_LIMIT_EXCEEDED', 429, message, { retryAfterMs });

/** The admin route keeps at most `max` limit overrides. */
export const tooManyOverrides = (max: number) =>
  new HubError(
    'HERALD_HUB_TOO_MANY_OVERRIDES',
    409,
    `At most ${max} limit overrides are kept: delete one first`,
  );

/** RFC 6750 §3.1 error codes, carried by the errors that answer with a challenge (challenge.ts). */
export type BearerErrorCode = 'invalid_request' | 'invalid_token' | 'insufficient_scope';

/**
 * The hub's typed errors: a code and an HTTP status, mapped to the wire in one place (the error
 * handler in hub.ts). Messages are safe to show to clients: never key material or compiler output.
 */
export class HubError extends Error {
  override readonly name = 'HubError';
  constructor(
    readonly code: string,
    readonly status: number,
    message: string,
    /** Label of `mercure_auth_failures_total{reason}` when this is an auth failure. */
    readonly authReason?: string,
    /**
     * The `WWW-Authenticate: Bearer` challenge this error carries (challenge.ts): `null` for the
     * bare one, undefined for none.
     */
    readonly bearerError?: BearerErrorCode | null,
  ) {
    super(message);
  }
}

export const missingMatcher = () =>
  new HubError('HUB_ERR_NO_MATCHER', 400, 'Missing "match" (or "topic") query parameter');
export const tooManyMatchers = (limit: number) =>
  new HubError('HUB_ERR_TOO_MANY_MATCHERS', 400, `Too many matchers (at most ${limit})`);
export const patternTooLong = (limit: number) =>
  new HubError('HUB_ERR_PATTERN_TOO_LONG', 400, `Matcher too long (at most ${limit} bytes)`);
export const matchersTooComplex = (limit: number) =>
  new HubError(
    'HUB_ERR_MATCHERS_TOO_COMPLEX',
    400,
    `The matchers of one subscription compile to more than ${limit} instructions; use fewer or simpler patterns`,
  );
export const unsupportedMatchType = () =>
  new HubError('HUB_ERR_UNSUPPORTED_MATCH_TYPE', 501, 'Unsupported matcher type');
export const invalidField = (message: string) => new HubError('HUB_ERR_INVALID_FIELD', 400, message);
/** A valid token that does not allow the operation (RFC 6750 `insufficient_scope`). */
export const forbidden = (message = 'Forbidden', reason = 'forbidden') =>
  new HubError('HUB_ERR_FORBIDDEN', 403, message, reason, 'insufficient_scope');
/** No credentials where some are required: the bare challenge (RFC 6750 §3.1, no error code). */
export const unauthorized = (message = 'Unauthorized', reason = 'missing_token') =>
  new HubError('HUB_ERR_UNAUTHORIZED', 401, message, reason, null);
/** A cookie-authenticated publish without Origin or Referer (CSRF rule): a malformed presentation. */
export const originRequired = () =>
  new HubError(
    'HUB_ERR_ORIGIN_REQUIRED',
    400,
    'A cookie-authenticated publish request must carry an Origin or Referer header',
    'csrf',
    'invalid_request',
  );
/** A cookie-authenticated publish from an origin that may not publish with a cookie (CSRF rule). */
export const originRefused = (message: string) =>
  new HubError('HUB_ERR_ORIGIN_REFUSED', 403, message, 'csrf', 'insufficient_scope');
export const draining = () =>
  new HubError('HUB_ERR_DRAINING', 503, 'This node is shutting down; retry elsewhere');
export const backendUnavailable = () =>
  new HubError('HUB_ERR_BACKEND_UNAVAILABLE', 503, 'The update backend is unavailable; retry later');
export const notFound = () => new HubError('HUB_ERR_NOT_FOUND', 404, 'Not Found');

/**
 * The transport could not do what was asked (Redis unreachable, no reply in time): the outcome of
 * a publish is then "not done, retry" (docs/hub.md, resent publishes). Not an HTTP error: the
 * edge maps it (`asHubError`), and its message, which may name internals, stays in the logs.
 */
export class TransportUnavailableError extends Error {
  override readonly name = 'TransportUnavailableError';
  readonly code = 'HUB_TRANSPORT_UNAVAILABLE';
}

/** The HTTP form of an error a handler let through: transport failures become 503s. */
export function asHubError(error: Error): Error {
  return error instanceof TransportUnavailableError ? backendUnavailable() : error;
}

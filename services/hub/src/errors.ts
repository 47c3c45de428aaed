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
export const forbidden = (message = 'Forbidden', reason = 'forbidden') =>
  new HubError('HUB_ERR_FORBIDDEN', 403, message, reason);
export const unauthorized = (message = 'Unauthorized', reason = 'missing_token') =>
  new HubError('HUB_ERR_UNAUTHORIZED', 401, message, reason);
export const draining = () =>
  new HubError('HUB_ERR_DRAINING', 503, 'This node is shutting down; retry elsewhere');
export const backendUnavailable = () =>
  new HubError('HUB_ERR_BACKEND_UNAVAILABLE', 503, 'The update backend is unavailable; retry later');
export const notFound = () => new HubError('HUB_ERR_NOT_FOUND', 404, 'Not Found');

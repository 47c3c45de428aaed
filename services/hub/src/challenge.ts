import { AuthError } from '@herald/auth';
import { type BearerErrorCode, HubError } from './errors.js';

/**
 * What `WWW-Authenticate: Bearer` challenge an error answers with (Mercure draft, "Error
 * Responses"; RFC 6750 §3): `null` for the bare challenge (no credentials were sent: no error
 * code, §3.1), a code, or `undefined` for no challenge at all (a request malformed independently
 * of the token, a 5xx).
 */
export function bearerErrorOf(error: unknown): BearerErrorCode | null | undefined {
  if (error instanceof HubError) return error.bearerError;
  if (!(error instanceof AuthError)) return undefined;
  if (error.reason === 'missing_token') return null;
  if (error.status === 401) return 'invalid_token';
  if (error.status === 403) return 'insufficient_scope';
  // The token's presentation is what is wrong: not `Bearer <token>`, a repeated or empty query
  // parameter, or a token sent over plain HTTP.
  if (error.reason === 'malformed_token' || error.reason === 'insecure_transport') return 'invalid_request';
  return undefined;
}

/**
 * The challenge header value. `resource_metadata` (RFC 9728 §5.1) is on every challenge, not
 * only the bare one, as the Mercure draft recommends; its URL is the hub's configured identity,
 * never derived from the request.
 */
export function bearerChallenge(code: BearerErrorCode | null, resourceMetadataUrl: string): string {
  const parameters = code === null ? [] : [`error="${code}"`];
  parameters.push(`resource_metadata="${resourceMetadataUrl}"`);
  return `Bearer ${parameters.join(', ')}`;
}

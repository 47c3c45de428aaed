/**
 * The URL with the value of any token-carrying query parameter replaced: Mercure lets tokens
 * ride in the query as `authorization` (auth.md), RFC 6750 as `access_token`, and access logs
 * must never carry a token.
 */
export function redactUrl(url: string): string {
  return url.replace(/([?&](?:authorization|access_token)=)[^&#]*/gi, '$1[REDACTED]');
}

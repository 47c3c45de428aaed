/**
 * The URL with the value of any `authorization` query parameter replaced: Mercure lets tokens
 * ride in the query (auth.md), and access logs must never carry a token.
 */
export function redactUrl(url: string): string {
  return url.replace(/([?&]authorization=)[^&#]*/gi, '$1[REDACTED]');
}

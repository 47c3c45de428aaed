/** A compiled topic matcher: one `match*` query parameter, or one claim entry. */
export interface TopicMatcher {
  /** Canonical name: `Exact`, `URLPattern`, `Regexp`, `URITemplate`. */
  readonly matchType: string;
  readonly match: string;
  matches(topic: string): boolean;
}

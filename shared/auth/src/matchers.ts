import { AuthError } from './errors.js';
import { LruMap } from './lru.js';
import { compileRegexp } from './matchers-regexp.js';
import { compileUriTemplate, looksLikeUriTemplate } from './matchers-uri-template.js';
import { compileUrlPattern } from './matchers-url-pattern.js';

/**
 * Topic selectors: one compiler shared by the hub's subscribe matchers (`match*` query
 * parameters) and by the token's `mercure.publish`/`mercure.subscribe` claims, so the two can
 * never disagree on what a pattern means (STYLE: "the claim matchers exist once").
 */
export const MATCHER_TYPES = ['Exact', 'URLPattern', 'Regexp', 'URITemplate'] as const;
export type MatcherType = (typeof MATCHER_TYPES)[number];

/** The reserved wildcard: matches every topic whatever the matcher type (Mercure draft). */
export const WILDCARD = '*';

/** The reference hub's per-pattern bound (4096 bytes); longer patterns are refused. */
export const MAX_PATTERN_BYTES = 4096;

/**
 * Base URL for relative URL patterns and topics when the hub's URL is not known. The reference
 * hub uses the same reserved name (RFC 6761 `.invalid`) so it cannot collide with a real origin;
 * relative matches relative and absolute matches absolute against it.
 */
export const FALLBACK_BASE_URL = 'http://mercure.invalid/.well-known/mercure';

export interface TopicSelector {
  /** The pattern as given. */
  readonly match: string;
  /** Canonical casing of the matcher type. */
  readonly matchType: MatcherType;
  /** True for the `*` wildcard. */
  readonly isWildcard: boolean;
  /** Whether this selector matches one topic. */
  matches(topic: string): boolean;
}

export interface SelectorOptions {
  /** The hub's public URL: base for relative URL patterns and relative topics. */
  readonly baseUrl?: string | URL | undefined;
}

const TYPE_BY_LOWERCASE: ReadonlyMap<string, MatcherType> = new Map(
  MATCHER_TYPES.map((type) => [type.toLowerCase(), type]),
);

/** The canonical matcher type for a claim's or query's `matchType` (case-insensitive). */
export function resolveMatcherType(matchType: string | null | undefined): MatcherType | undefined {
  if (matchType === undefined || matchType === null || matchType === '') return 'Exact';
  return TYPE_BY_LOWERCASE.get(matchType.toLowerCase());
}

/** C0, DEL and C1 controls are forbidden in topics and matcher values (Mercure draft §2). */
// biome-ignore lint/suspicious/noControlCharactersInRegex: the point is to find control characters
const CONTROL_CHARACTERS = /[\u0000-\u001f\u007f-\u009f]/;

/**
 * Compiled selectors kept for reuse. Bounded by count because an entry is not small (a compiled
 * URL pattern with its RE2 programs weighs ~26 KB, measured) and patterns come from clients.
 */
const SELECTOR_CACHE_ENTRIES = 1024;
const selectorCache = new LruMap<string, TopicSelector>(SELECTOR_CACHE_ENTRIES);

/**
 * Match results for pattern selectors, keyed by (selector, topic), shared by all selectors: a
 * fan-out tests one topic against many subscribers holding the same selector (the reference hub
 * keeps the same kind of cache). Bounded in entries, and only short keys are remembered, so the
 * memo stays within a few megabytes whatever topics and patterns clients choose.
 */
const MATCH_MEMO_ENTRIES = 20_000;
const MATCH_MEMO_MAX_KEY_LENGTH = 512;
const matchMemo = new LruMap<string, boolean>(MATCH_MEMO_ENTRIES);

function invalidPattern(): AuthError {
  // Generic on purpose: a compiler's message can quote the pattern or leak internals (hub.md).
  return new AuthError('invalid_pattern');
}

function memoised(selectorKey: string, test: (topic: string) => boolean): (topic: string) => boolean {
  return (topic) => {
    if (selectorKey.length + topic.length > MATCH_MEMO_MAX_KEY_LENGTH) return test(topic);
    const key = `${selectorKey}\u0001${topic}`;
    const known = matchMemo.get(key);
    if (known !== undefined) return known;
    const result = test(topic);
    matchMemo.set(key, result);
    return result;
  };
}

function baseUrlText(options: SelectorOptions | undefined): string {
  const base = options?.baseUrl;
  return base === undefined ? FALLBACK_BASE_URL : String(base);
}

function buildSelector(key: string, match: string, matchType: MatcherType, baseUrl: string): TopicSelector {
  let test: (topic: string) => boolean;
  try {
    switch (matchType) {
      case 'Exact':
        // Byte-for-byte, no normalisation (Mercure draft, "Exact Matching").
        return { match, matchType, isWildcard: false, matches: (topic) => topic === match };
      case 'Regexp':
        test = compileRegexp(match);
        break;
      case 'URITemplate':
        test = compileUriTemplate(match);
        break;
      case 'URLPattern':
        test = compileUrlPattern(match, baseUrl);
        break;
    }
  } catch {
    throw invalidPattern();
  }
  return { match, matchType, isWildcard: false, matches: memoised(key, test) };
}

/**
 * Compiles (or fetches from a bounded cache) the selector for a pattern. `matchType` is
 * case-insensitive and absent means Exact. `*` is the wildcard for any type, even an unknown
 * one (the draft resolves it before the type). Throws AuthError `unsupported_matcher` (501) for
 * an unknown type and `invalid_pattern` (400) for a pattern that does not compile, is empty, too
 * long, or contains control characters.
 */
export function compileTopicSelector(
  match: string,
  matchType?: string | null,
  options?: SelectorOptions,
): TopicSelector {
  const resolved = resolveMatcherType(matchType);
  if (match === WILDCARD) {
    return { match, matchType: resolved ?? 'Exact', isWildcard: true, matches: () => true };
  }
  if (!resolved) throw new AuthError('unsupported_matcher');
  if (typeof match !== 'string' || match === '') throw invalidPattern();
  if (Buffer.byteLength(match, 'utf8') > MAX_PATTERN_BYTES || CONTROL_CHARACTERS.test(match)) {
    throw invalidPattern();
  }
  const baseUrl = baseUrlText(options);
  const key = `${resolved}\u0000${resolved === 'URLPattern' ? baseUrl : ''}\u0000${match}`;
  const cached = selectorCache.get(key);
  if (cached) return cached;
  const selector = buildSelector(key, match, resolved, baseUrl);
  selectorCache.set(key, selector);
  return selector;
}

/**
 * A Mercure 0.x selector (bare-string claims, the `topic=` query parameter), for legacy mode
 * only: `*`, an exact topic, or, when it contains an expression, a URI template that also
 * matches itself exactly (as the reference hub's 0.x matcher did: exact comparison first, then
 * the template; a string that is not a valid template is just an exact topic).
 */
export function compileLegacySelector(match: string): TopicSelector {
  if (match === WILDCARD) return { match, matchType: 'Exact', isWildcard: true, matches: () => true };
  if (typeof match !== 'string' || match === '') throw invalidPattern();
  if (Buffer.byteLength(match, 'utf8') > MAX_PATTERN_BYTES || CONTROL_CHARACTERS.test(match)) {
    throw invalidPattern();
  }
  const key = `legacy\u0000\u0000${match}`;
  const cached = selectorCache.get(key);
  if (cached) return cached;
  let selector: TopicSelector = {
    match,
    matchType: 'Exact',
    isWildcard: false,
    matches: (topic) => topic === match,
  };
  if (looksLikeUriTemplate(match)) {
    try {
      const template = memoised(key, compileUriTemplate(match));
      selector = {
        match,
        matchType: 'URITemplate',
        isWildcard: false,
        matches: (topic) => topic === match || template(topic),
      };
    } catch {
      // Not a valid template: the reference hub treats it as a raw (exact) topic.
    }
  }
  selectorCache.set(key, selector);
  return selector;
}

import { AuthError } from './errors.js';
import { LruMap } from './lru.js';
import type { BoundedProgram } from './matchers-re2.js';
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
  /** RE2 instructions this selector runs per topic: its match cost factor (0 for Exact and `*`). */
  readonly programSize: number;
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
 * Topics longer than this (UTF-16 code units) never match a pattern selector; Exact and `*` are
 * unaffected. A match costs up to program size × topic length, so with MAX_PROGRAM_SIZE this caps
 * one selector's cost per topic (docs/hub.md, "Limits"; issue #8: one publish of a 520-character
 * topic against one hostile subscriber took 11 s). Real topic IRIs are far shorter; longer
 * ones can still be subscribed to and authorized exactly.
 */
export const MAX_PATTERN_TOPIC_LENGTH = 1024;

/**
 * Compiled selectors kept for reuse, bounded in estimated bytes (and in count): an entry weighs
 * from a few hundred bytes (Exact) to ~650 KB (a URL pattern at the program bound with a full DFA
 * budget per component), and patterns come from clients (docs/hub.md, "Limits").
 */
export const SELECTOR_CACHE_BYTES = 64 * 1024 * 1024;
const SELECTOR_CACHE_ENTRIES = 4096;
/** Fixed per-entry overhead: the selector object, closures, map slot. */
const SELECTOR_ENTRY_OVERHEAD = 512;
const selectorWeights = new WeakMap<TopicSelector, number>();
const selectorCache = new LruMap<string, TopicSelector>(SELECTOR_CACHE_ENTRIES, {
  maxBytes: SELECTOR_CACHE_BYTES,
  sizeOf: (key, selector) => SELECTOR_ENTRY_OVERHEAD + 2 * key.length + (selectorWeights.get(selector) ?? 0),
});
let compilations = 0;

export interface SelectorCacheStats {
  readonly entries: number;
  readonly bytes: number;
  readonly maxBytes: number;
  /** Patterns compiled since the process started (cache misses that reached a compiler). */
  readonly compilations: number;
}

/** The selector cache's occupancy and the compile count, for tests and metrics. */
export function selectorCacheStats(): SelectorCacheStats {
  return {
    entries: selectorCache.size,
    bytes: selectorCache.bytes,
    maxBytes: SELECTOR_CACHE_BYTES,
    compilations,
  };
}

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

/** The topic test of a compiled pattern: length cap first, then the memo, then the program. */
function patternTest(selectorKey: string, program: BoundedProgram): (topic: string) => boolean {
  return (topic) => {
    if (topic.length > MAX_PATTERN_TOPIC_LENGTH) return false;
    if (selectorKey.length + topic.length > MATCH_MEMO_MAX_KEY_LENGTH) return program.test(topic);
    const key = `${selectorKey}\u0001${topic}`;
    const known = matchMemo.get(key);
    if (known !== undefined) return known;
    const result = program.test(topic);
    matchMemo.set(key, result);
    return result;
  };
}

function baseUrlText(options: SelectorOptions | undefined): string {
  const base = options?.baseUrl;
  return base === undefined ? FALLBACK_BASE_URL : String(base);
}

function compileProgram(
  match: string,
  matchType: Exclude<MatcherType, 'Exact'>,
  baseUrl: string,
): BoundedProgram {
  compilations += 1;
  try {
    switch (matchType) {
      case 'Regexp':
        return compileRegexp(match);
      case 'URITemplate':
        return compileUriTemplate(match);
      case 'URLPattern':
        return compileUrlPattern(match, baseUrl);
    }
  } catch {
    // Syntax errors and patterns past the program bounds alike: generic, no compiler output.
    throw invalidPattern();
  }
}

function buildSelector(key: string, match: string, matchType: MatcherType, baseUrl: string): TopicSelector {
  if (matchType === 'Exact') {
    // Byte-for-byte, no normalisation (Mercure draft, "Exact Matching").
    return { match, matchType, isWildcard: false, programSize: 0, matches: (topic) => topic === match };
  }
  const program = compileProgram(match, matchType, baseUrl);
  const selector: TopicSelector = {
    match,
    matchType,
    isWildcard: false,
    programSize: program.programSize,
    matches: patternTest(key, program),
  };
  selectorWeights.set(selector, program.memoryBytes);
  return selector;
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
    return { match, matchType: resolved ?? 'Exact', isWildcard: true, programSize: 0, matches: () => true };
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
  if (match === WILDCARD) {
    return { match, matchType: 'Exact', isWildcard: true, programSize: 0, matches: () => true };
  }
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
    programSize: 0,
    matches: (topic) => topic === match,
  };
  if (looksLikeUriTemplate(match)) {
    let program: BoundedProgram | undefined;
    compilations += 1;
    try {
      program = compileUriTemplate(match);
    } catch {
      // Not a valid template (or one past the bounds): the reference hub treats it as a raw
      // (exact) topic.
    }
    if (program) {
      const template = patternTest(key, program);
      selector = {
        match,
        matchType: 'URITemplate',
        isWildcard: false,
        programSize: program.programSize,
        matches: (topic) => topic === match || template(topic),
      };
      selectorWeights.set(selector, program.memoryBytes);
    }
  }
  selectorCache.set(key, selector);
  return selector;
}

import { AuthError } from './errors.js';
import {
  compileLegacySelector,
  compileTopicSelector,
  type SelectorOptions,
  type TopicSelector,
} from './matchers.js';

/**
 * The Mercure claims of a verified token, normalised from either grammar:
 *
 * - the `mercure` claim (docs/auth.md, "Hub profile"): `publish`/`subscribe` arrays of `{match, matchType?, payload?}`
 *   and a fallback `payload` (0.x bare strings only in legacy mode);
 * - the Mercure 1.0 access token (RFC 9068 `typ: at+jwt`) with an RFC 9396
 *   `authorization_details` claim, so clients of the current reference hub work unchanged.
 */
export interface MercureClaimEntry {
  readonly selector: TopicSelector;
  /** The entry's own payload; undefined when it carries none. */
  readonly payload: unknown;
}

export type MercureClaimsGrammar = 'mercure' | 'authorization_details' | 'none';

export interface MercureClaims {
  readonly grammar: MercureClaimsGrammar;
  readonly publish: readonly MercureClaimEntry[];
  readonly subscribe: readonly MercureClaimEntry[];
  /** `mercure.payload`, the fallback payload; undefined when absent (and in the 1.0 grammar). */
  readonly payload: unknown;
}

export interface ParseMercureClaimsOptions extends SelectorOptions {
  /**
   * Legacy mode (`MERCURE_LEGACY_CLAIMS`), a migration aid for applications still minting 0.x
   * tokens: bare strings are accepted as URI templates or exact topics.
   */
  readonly legacy?: boolean | undefined;
}

/**
 * Detail types read as Mercure authorization details. auth.md names
 * `https://mercure.rocks/authorization-detail`; the current draft (draft-dunglas-mercure-08)
 * names it `mercure`. Both are read so tokens minted for either work.
 */
export const MERCURE_DETAIL_TYPES: ReadonlySet<string> = new Set([
  'https://mercure.rocks/authorization-detail',
  'mercure',
]);

/**
 * Bound on selectors per token, counted over both lists: each one may cost a pattern
 * compilation, and the token is attacker-supplied until its signature checks out — after, it
 * is the issuer's, but a runaway issuer should not stall the hub either. Exceeding it is an
 * invalid token (draft: "Tokens exceeding any such limit MUST be rejected as invalid tokens").
 */
export const MAX_SELECTORS_PER_TOKEN = 1000;

const BARE_STRING_MESSAGE =
  'Bare-string mercure claims are the Mercure 0.x format: use {"match": …, "matchType": …} objects';

/** RFC 9068 §4: the access-token `typ`, with or without the `application/` prefix. */
function isAccessTokenType(typ: unknown): boolean {
  if (typeof typ !== 'string') return false;
  const lowered = typ.toLowerCase();
  return lowered === 'at+jwt' || lowered === 'application/at+jwt';
}

function isPlainObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

function invalidClaims(message?: string): AuthError {
  return new AuthError('invalid_claims', message);
}

/**
 * Compiles a selector found in a token. Anything wrong with it, an unknown matcher type
 * included, is a defect of the token: 401 `invalid_claims`, as in the `authorization_details`
 * grammar (Mercure draft, error responses: claims that fail to validate are `invalid_token`).
 * The 501 for an unknown type belongs to the subscribe query parameter, where the client asked
 * for a matcher the hub does not implement; a token is not a request for a feature.
 */
function compileClaimSelector(
  match: string,
  matchType: string | undefined,
  options: ParseMercureClaimsOptions,
): TopicSelector {
  try {
    return compileTopicSelector(match, matchType, options);
  } catch {
    throw invalidClaims();
  }
}

class SelectorBudget {
  private used = 0;
  spend(count = 1): void {
    this.used += count;
    if (this.used > MAX_SELECTORS_PER_TOKEN) throw invalidClaims('Too many topic selectors in the token');
  }
}

function parseMercureEntry(
  entry: unknown,
  options: ParseMercureClaimsOptions,
  budget: SelectorBudget,
): MercureClaimEntry {
  budget.spend();
  if (typeof entry === 'string') {
    // Seed: "The hub rejects bare strings with 401 Unauthorized" (the 0.x format).
    if (!options.legacy) throw invalidClaims(BARE_STRING_MESSAGE);
    try {
      return { selector: compileLegacySelector(entry), payload: undefined };
    } catch {
      throw invalidClaims();
    }
  }
  if (!isPlainObject(entry) || typeof entry.match !== 'string') throw invalidClaims();
  const matchType = entry.matchType;
  if (matchType !== undefined && matchType !== null && typeof matchType !== 'string') {
    throw invalidClaims();
  }
  return {
    selector: compileClaimSelector(entry.match, matchType ?? undefined, options),
    payload: Object.hasOwn(entry, 'payload') ? entry.payload : undefined,
  };
}

function parseMercureList(
  value: unknown,
  options: ParseMercureClaimsOptions,
  budget: SelectorBudget,
): MercureClaimEntry[] {
  // Absent and null both mean "no entries" (the reference decodes null to an empty list).
  if (value === undefined || value === null) return [];
  if (!Array.isArray(value)) throw invalidClaims();
  return value.map((entry) => parseMercureEntry(entry, options, budget));
}

function parseMercureClaim(
  claim: unknown,
  options: ParseMercureClaimsOptions,
): Omit<MercureClaims, 'grammar'> {
  if (!isPlainObject(claim)) throw invalidClaims();
  const budget = new SelectorBudget();
  return {
    publish: parseMercureList(claim.publish, options, budget),
    subscribe: parseMercureList(claim.subscribe, options, budget),
    payload: Object.hasOwn(claim, 'payload') ? claim.payload : undefined,
  };
}

/** Draft-08 spells the member `matchType` ("Exact", "URLPattern"); auth.md `match_type`. */
function detailTopicMatchType(topic: Record<string, unknown>): 'Exact' | 'URLPattern' {
  const spellings = [topic.match_type, topic.matchType].filter((value) => value !== undefined);
  const resolved = new Set<string>();
  for (const spelling of spellings) {
    if (typeof spelling !== 'string') throw invalidClaims();
    const lowered = spelling.toLowerCase();
    // The 1.0 grammar defines exactly these two; anything else invalidates the token (draft:
    // failures specific to a matcher's type reject the token, no partial acceptance).
    if (lowered !== 'exact' && lowered !== 'urlpattern') throw invalidClaims();
    resolved.add(lowered);
  }
  if (resolved.size > 1) throw invalidClaims();
  return resolved.has('urlpattern') ? 'URLPattern' : 'Exact';
}

function parseAuthorizationDetails(
  details: readonly unknown[],
  options: ParseMercureClaimsOptions,
): Omit<MercureClaims, 'grammar'> {
  const budget = new SelectorBudget();
  const publish: MercureClaimEntry[] = [];
  const subscribe: MercureClaimEntry[] = [];
  for (const detail of details) {
    if (!isPlainObject(detail) || typeof detail.type !== 'string') throw invalidClaims();
    // RFC 9396: details of other types belong to other resource servers; ignore them.
    if (!MERCURE_DETAIL_TYPES.has(detail.type)) continue;
    const { actions, topics } = detail;
    if (!Array.isArray(actions) || actions.length === 0) throw invalidClaims();
    let canPublish = false;
    let canSubscribe = false;
    for (const action of actions) {
      if (action === 'publish') canPublish = true;
      else if (action === 'subscribe') canSubscribe = true;
      else throw invalidClaims();
    }
    if (!Array.isArray(topics) || topics.length === 0) throw invalidClaims();
    budget.spend(topics.length);
    const payload = Object.hasOwn(detail, 'payload') ? detail.payload : undefined;
    for (const topic of topics) {
      // Bare strings are invalid in this grammar: no silent reinterpretation as Exact.
      if (!isPlainObject(topic) || typeof topic.match !== 'string' || topic.match === '') {
        throw invalidClaims();
      }
      const entry = {
        selector: compileClaimSelector(topic.match, detailTopicMatchType(topic), options),
        payload,
      };
      if (canPublish) publish.push(entry);
      if (canSubscribe) subscribe.push(entry);
    }
  }
  return { publish, subscribe, payload: undefined };
}

function hasMercureDetail(details: readonly unknown[]): boolean {
  return details.some((detail) => MERCURE_DETAIL_TYPES.has((detail as { type: string }).type));
}

/**
 * Reads the Mercure claims of a verified token. Throws AuthError:
 * `invalid_claims` (401) for malformed claims, bare strings outside legacy mode, a 1.0 token
 * without `typ: at+jwt`, too many selectors, or a selector that does not compile (an unknown
 * `matchType` included); `ambiguous_claims` (401) when one token uses both grammars.
 * A token with neither grammar grants nothing (grammar `none`).
 */
export function parseMercureClaims(
  payload: Readonly<Record<string, unknown>>,
  header: Readonly<Record<string, unknown>>,
  options: ParseMercureClaimsOptions = {},
): MercureClaims {
  const mercure = payload.mercure;
  const rawDetails = payload.authorization_details;
  let details: readonly unknown[] | undefined;
  if (rawDetails !== undefined) {
    // RFC 9396 §2: an array of objects, each with a string `type`, whoever they are for.
    const wellFormed =
      Array.isArray(rawDetails) &&
      rawDetails.every((detail) => isPlainObject(detail) && typeof detail.type === 'string');
    if (!wellFormed) throw invalidClaims();
    details = rawDetails as readonly unknown[];
  }
  const usesDetails = details !== undefined && hasMercureDetail(details);
  if (usesDetails && mercure !== undefined) throw new AuthError('ambiguous_claims');
  if (details !== undefined && usesDetails) {
    // RFC 9068 §4 / draft: the hub MUST check `typ` so other JWTs (ID tokens) are not accepted.
    if (!isAccessTokenType(header.typ)) {
      throw invalidClaims('Mercure authorization_details tokens must have typ "at+jwt"');
    }
    return { grammar: 'authorization_details', ...parseAuthorizationDetails(details, options) };
  }
  if (mercure !== undefined) return { grammar: 'mercure', ...parseMercureClaim(mercure, options) };
  return { grammar: 'none', publish: [], subscribe: [], payload: undefined };
}

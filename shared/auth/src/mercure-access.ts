import { resolveMatcherType } from './matchers.js';
import type { MercureClaimEntry, MercureClaims } from './mercure-claims.js';

/**
 * Mercure access decisions: pure functions of the claims and the topics, so the hub's publish
 * and dispatch paths, and the tests, call the same code.
 */

function matchesSomeTopic(entry: MercureClaimEntry, topics: readonly string[]): boolean {
  return entry.selector.isWildcard || topics.some((topic) => entry.selector.matches(topic));
}

/**
 * May this token publish an update with these topics (canonical first, then alternates)?
 * Seed: an empty or missing `publish` forbids publishing; every topic must match some entry,
 * else the whole publication is refused (the hub answers 403).
 */
export function canPublish(claims: MercureClaims | undefined, topics: readonly string[]): boolean {
  if (!claims || claims.publish.length === 0 || topics.length === 0) return false;
  return topics.every((topic) =>
    claims.publish.some((entry) => entry.selector.isWildcard || entry.selector.matches(topic)),
  );
}

/**
 * May this subscriber receive a *private* update with these topics? Seed: iff some `subscribe`
 * entry matches some topic of the update, canonical or alternate. Public updates never reach
 * this function. No claims (anonymous) or an empty `subscribe`: no private updates.
 */
export function canReceive(claims: MercureClaims | undefined, topics: readonly string[]): boolean {
  if (!claims) return false;
  return claims.subscribe.some((entry) => matchesSomeTopic(entry, topics));
}

export interface SubscriptionMatcher {
  readonly match: string;
  /** As given by the subscriber (query parameter suffix); case-insensitive; absent = Exact. */
  readonly matchType?: string | undefined;
}

/**
 * The payload attached to one subscription. The first `subscribe` entry that matches wins,
 * an entry matching when (rules of docs/auth.md, "Hub profile", in this order):
 *   1. the entry is `*`;
 *   2. it has the same matcher type and the identical pattern;
 *   3. its matcher, applied to the subscription's match value as if it were a topic, matches.
 * The winner's own payload is returned; when the winner carries none, or no entry matches, the
 * fallback `mercure.payload` is (undefined when there is none).
 */
export function selectPayload(claims: MercureClaims | undefined, subscription: SubscriptionMatcher): unknown {
  if (!claims) return undefined;
  const subscriptionType = resolveMatcherType(subscription.matchType);
  for (const entry of claims.subscribe) {
    const { selector } = entry;
    const matches =
      selector.isWildcard ||
      (selector.matchType === subscriptionType && selector.match === subscription.match) ||
      selector.matches(subscription.match);
    if (matches) return entry.payload !== undefined ? entry.payload : claims.payload;
  }
  return claims.payload;
}

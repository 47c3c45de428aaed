import type { Subscriber } from './subscriber.js';
import type { TopicMatcher } from './topic-matcher.js';
import type { StoredUpdate } from './update.js';

function isExact(matcher: TopicMatcher): boolean {
  return matcher.matchType === 'Exact' && matcher.match !== '*';
}

/**
 * This node's subscribers, indexed so an update is not matched against every connection:
 * exact topics in a map (one lookup per topic of the update), pattern matchers in a separate set
 * that is scanned (hub.md, cluster design: "index exact topics in a map; keep patterns separate").
 */
export class SubscriberIndex {
  private readonly byExactTopic = new Map<string, Set<Subscriber>>();
  private readonly withPatterns = new Set<Subscriber>();
  private readonly everyone = new Set<Subscriber>();

  get size(): number {
    return this.everyone.size;
  }

  all(): IterableIterator<Subscriber> {
    return this.everyone.values();
  }

  add(subscriber: Subscriber): void {
    this.everyone.add(subscriber);
    for (const matcher of subscriber.matchers) {
      if (!isExact(matcher)) {
        this.withPatterns.add(subscriber);
        continue;
      }
      let set = this.byExactTopic.get(matcher.match);
      if (!set) {
        set = new Set();
        this.byExactTopic.set(matcher.match, set);
      }
      set.add(subscriber);
    }
  }

  remove(subscriber: Subscriber): void {
    if (!this.everyone.delete(subscriber)) return;
    this.withPatterns.delete(subscriber);
    for (const matcher of subscriber.matchers) {
      if (!isExact(matcher)) continue;
      const set = this.byExactTopic.get(matcher.match);
      if (!set) continue;
      set.delete(subscriber);
      if (set.size === 0) this.byExactTopic.delete(matcher.match);
    }
  }

  /** Delivers one update to every matching, entitled subscriber; returns how many got it. */
  dispatch(update: StoredUpdate): number {
    const { topics } = update;
    // Private updates: one entitlement decision per distinct token (claims object), not per connection.
    const decisions = update.private ? new Map<object | undefined, boolean>() : undefined;
    // Fast path: one topic, nobody with a pattern: each candidate is reached once.
    if (topics.length === 1 && this.withPatterns.size === 0) {
      const set = this.byExactTopic.get(topics[0] as string);
      if (!set) return 0;
      let delivered = 0;
      for (const subscriber of set) {
        if (subscriber.isEntitledTo(update, decisions)) {
          subscriber.deliver(update);
          delivered += 1;
        }
      }
      return delivered;
    }
    const candidates = new Set<Subscriber>();
    for (const topic of topics) {
      const set = this.byExactTopic.get(topic);
      if (set) for (const subscriber of set) candidates.add(subscriber);
    }
    for (const subscriber of this.withPatterns) {
      if (!candidates.has(subscriber) && subscriber.matchesTopics(topics)) candidates.add(subscriber);
    }
    let delivered = 0;
    for (const subscriber of candidates) {
      if (subscriber.takesCopy(update) && subscriber.isEntitledTo(update, decisions)) {
        subscriber.deliver(update);
        delivered += 1;
      }
    }
    return delivered;
  }
}

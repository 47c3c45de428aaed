import type { TopicMatcher } from './topic-matcher.js';
import type { StoredUpdate } from './update.js';

/**
 * A resume (Last-Event-ID) with several partitions replays each partition from this long before
 * the named update's time (ms): the bound on how far one partition's delivery on a node may trail
 * another's, plus clock skew between Cluster shards (docs/hub.md, Last-Event-ID across partitions).
 */
export const RESUME_WINDOW = 1000;

const FNV_OFFSET_BASIS = 2166136261;
const FNV_PRIME = 16777619;
const encoder = new TextEncoder();

/** A topic's partition: 32-bit FNV-1a of its UTF-8 bytes, mod `count` (stable across nodes). */
export function partitionOfTopic(topic: string, count: number): number {
  if (count === 1) return 0;
  let hash = FNV_OFFSET_BASIS;
  for (const byte of encoder.encode(topic)) {
    hash ^= byte;
    hash = Math.imul(hash, FNV_PRIME) >>> 0;
  }
  return hash % count;
}

/** The distinct partitions of an update's topics, ascending: where its copies are written. */
export function partitionsOfTopics(topics: readonly string[], count: number): number[] {
  return [...new Set(topics.map((topic) => partitionOfTopic(topic, count)))].sort((a, b) => a - b);
}

/**
 * The list of one partition, shared by every subscriber it is the answer for (most subscriptions
 * name topics of one partition): 32 bytes of heap per idle subscriber (docs/benchmarks.md).
 */
const ONE_PARTITION: (readonly number[])[] = [Object.freeze([0])];

/**
 * The partitions a subscription needs: the partitions of its topics when every matcher is an
 * exact topic, else every partition (`undefined`): a pattern can match a topic of any partition.
 */
export function partitionsOfMatchers(
  matchers: readonly TopicMatcher[],
  count: number,
): readonly number[] | undefined {
  if (count === 1) return ONE_PARTITION[0];
  const partitions = new Set<number>();
  for (const matcher of matchers) {
    if (matcher.matchType !== 'Exact' || matcher.match === '*') return undefined;
    partitions.add(partitionOfTopic(matcher.match, count));
  }
  if (partitions.size === 1) {
    const only = partitions.values().next().value as number;
    ONE_PARTITION[only] ??= Object.freeze([only]);
    return ONE_PARTITION[only];
  }
  return [...partitions].sort((a, b) => a - b);
}

/**
 * Whether a subscriber whose matchers say `matches` takes this copy: the copy of the lowest
 * partition among the update's topics it matches (docs/hub.md, delivery: one copy per
 * subscriber). A rule rather than a memory of delivered ids: nothing to bound or expire, and a
 * topic's updates reach its subscribers in that topic's partition order.
 */
export function takesCopy(update: StoredUpdate, matches: (topic: string) => boolean): boolean {
  const { topicPartitions } = update;
  if (topicPartitions === undefined) return true;
  let lowest = Number.POSITIVE_INFINITY;
  update.topics.forEach((topic, index) => {
    const partition = topicPartitions[index] as number;
    if (partition < lowest && matches(topic)) lowest = partition;
  });
  return lowest === update.partition;
}

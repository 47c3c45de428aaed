import type { Clock, RedisClient } from '@herald/redis';
import type { RedisRegistry } from './registry.js';

/** A script's reply as ioredis returns it. */
export type Reply = string | number | null | Reply[];

/** Partition and group names go URI-encoded into keys and script arguments (no ':' inside). */
export const encode = encodeURIComponent;
export const decode = decodeURIComponent;

/**
 * What every module of the Redis backend uses (storage-redis.ts builds it): the command
 * connection, the global registrations, key names, the scripts and the availability channel.
 */
export interface RedisBackend {
  readonly redis: RedisClient;
  readonly registry: RedisRegistry;
  /** The time node-side code reads; the scripts read the same one (RedisStorageOptions.clock). */
  readonly clock: Clock;
  /** A global key: `<prefix><parts joined by ':'>`. */
  key(...parts: string[]): string;
  /** `<prefix>{<queue>}:`: every key of one queue shares this hash tag. */
  base(queue: string): string;
  /**
   * Runs a script of lua/ by name (loaded once, called by SHA). With `oneSlot`, its keys must
   * share one hash tag (an error otherwise: a call site bug, as Cluster would answer CROSSSLOT).
   */
  run<T = Reply>(name: string, keys: string[], args: (string | number)[]): Promise<T>;
  /**
   * Every script call and MULTI must stay in one hash slot: true on Redis Cluster (and where a
   * test asks for it on standalone, so the rule is checked on every topology).
   */
  readonly oneSlot: boolean;
  /** "Work may be available" for these queues (names, or [queue, capacity] pairs). */
  notify(queues: Iterable<string | readonly [string, number]>): void;
}

/**
 * The text Redis Cluster hashes a key by (its slot): the first `{…}` when not empty, else the
 * whole key (cluster specification, "hash tags").
 */
export function slotTag(key: string): string {
  const open = key.indexOf('{');
  if (open === -1) return key;
  const close = key.indexOf('}', open + 1);
  if (close === -1 || close === open + 1) return key;
  return key.slice(open + 1, close);
}

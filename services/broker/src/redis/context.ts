import type { Redis } from '@herald/redis';
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
  readonly redis: Redis;
  readonly registry: RedisRegistry;
  /** A global key: `<prefix><parts joined by ':'>`. */
  key(...parts: string[]): string;
  /** `<prefix>{<queue>}:`: every key of one queue shares this hash tag. */
  base(queue: string): string;
  /** Runs a script of lua/ by name (loaded once, called by SHA). */
  run<T = Reply>(name: string, keys: string[], args: (string | number)[]): Promise<T>;
  /** "Work may be available" for these queues (names, or [queue, capacity] pairs). */
  notify(queues: Iterable<string | readonly [string, number]>): void;
}

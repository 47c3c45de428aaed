/**
 * Bounded closing lives in @herald/redis (issue #11, item 5). This re-export is only for
 * storage-redis.ts, owned by another change in flight: once it imports `closeRedis` from
 * @herald/redis, delete this file.
 */
export { closeRedis } from '@herald/redis';

import type { RedisClient } from './connection.js';
import { replyWithin } from './within.js';

/**
 * How long one closing step may wait on Redis. With Redis down, ioredis `quit()` and BullMQ
 * `close()` wait for a reconnect that may never come; a service's shutdown must not depend on
 * the SHUTDOWN_TIMEOUT cut of @herald/http to finish (it would then exit only after the full grace).
 */
export const CLOSE_STEP_MS = 2000;

const ignore = () => undefined;

/**
 * Waits for `work` to settle, at most `ms`: true when it settled (fulfilled or rejected), false
 * when the bound cut it. Never rejects: a closing step that fails or hangs must not stop the next.
 */
export function settleWithin(work: Promise<unknown>, ms: number = CLOSE_STEP_MS): Promise<boolean> {
  return replyWithin(work.then(ignore, ignore), ms, 'close').then(
    () => true,
    () => false,
  );
}

/**
 * Closes one connection, bounded: QUIT (lets queued replies arrive) only when connected and for
 * at most `ms`; then a plain disconnect, which also stops a connection that is reconnecting.
 */
export async function closeRedis(redis: RedisClient, ms: number = CLOSE_STEP_MS): Promise<void> {
  if (redis.status === 'ready') await settleWithin(redis.quit(), ms);
  redis.disconnect();
}

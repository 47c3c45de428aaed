import type { Redis } from '@herald/redis';

/**
 * How long one closing step may wait on Redis. With Redis down, ioredis `quit()` and BullMQ
 * `close()` wait for a reconnect that may never come; shutdown must not depend on the
 * SHUTDOWN_TIMEOUT cut of @herald/http to finish (it would then exit only after the full grace).
 */
export const CLOSE_STEP_MS = 2000;

/** Resolves when `work` settles or after `ms`, whichever comes first; never rejects. */
export async function settleWithin(work: Promise<unknown>, ms: number = CLOSE_STEP_MS): Promise<void> {
  let timer: NodeJS.Timeout | undefined;
  const bound = new Promise<void>((resolve) => {
    timer = setTimeout(resolve, ms);
  });
  try {
    await Promise.race([
      work.then(
        () => undefined,
        () => undefined,
      ),
      bound,
    ]);
  } finally {
    clearTimeout(timer);
  }
}

/**
 * Closes one connection: QUIT (lets queued replies arrive) only when connected, bounded;
 * otherwise, or when QUIT does not answer in time, a plain disconnect (stops reconnecting).
 */
export async function closeRedis(redis: Redis, ms: number = CLOSE_STEP_MS): Promise<void> {
  if (redis.status === 'ready') await settleWithin(redis.quit(), ms);
  redis.disconnect();
}

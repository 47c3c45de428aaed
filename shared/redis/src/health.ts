import type { Redis } from 'ioredis';

export interface RedisProbeResult {
  readonly ok: boolean;
  readonly latencyMs?: number;
  readonly error?: string;
}

/** PING with a deadline: for /readyz, never hangs on a dead connection. */
export async function probeRedis(redis: Redis, timeoutMs = 1000): Promise<RedisProbeResult> {
  const started = performance.now();
  let timer: NodeJS.Timeout | undefined;
  const deadline = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`no PING reply within ${timeoutMs} ms`)), timeoutMs);
  });
  try {
    const reply = await Promise.race([redis.ping(), deadline]);
    if (reply !== 'PONG') return { ok: false, error: `unexpected PING reply ${reply}` };
    return { ok: true, latencyMs: performance.now() - started };
  } catch (error) {
    return { ok: false, error: error instanceof Error ? error.message : String(error) };
  } finally {
    clearTimeout(timer);
  }
}

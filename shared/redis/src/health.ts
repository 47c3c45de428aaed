import type { RedisClient } from './connection.js';
import { replyWithin } from './within.js';

export interface RedisProbeResult {
  readonly ok: boolean;
  readonly latencyMs?: number;
  readonly error?: string;
}

/** PING with a deadline: for /readyz, never hangs on a dead connection. */
export async function probeRedis(redis: RedisClient, timeoutMs = 1000): Promise<RedisProbeResult> {
  const started = performance.now();
  try {
    const reply = await replyWithin(redis.ping(), timeoutMs, 'PING');
    if (reply !== 'PONG') return { ok: false, error: `unexpected PING reply ${reply}` };
    return { ok: true, latencyMs: performance.now() - started };
  } catch (error) {
    return { ok: false, error: error instanceof Error ? error.message : String(error) };
  }
}

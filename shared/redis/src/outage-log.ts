import type { RedisClient } from './client.js';
import { loggableError } from './log-error.js';

/** The two pino-style methods an outage is logged with. */
export interface OutageLogger {
  warn(details: object, message: string): void;
  info(details: object, message: string): void;
}

/** `host:port` of a redis:// URL, without credentials: what an operator checks. */
export function redisTarget(url: string): string {
  const parsed = new URL(url);
  return `${parsed.hostname}:${parsed.port || '6379'}`;
}

/**
 * Logs a node's Redis outages: ONE line when the first of its connections is lost (or cannot
 * connect at boot), ONE line when all of them are back, with the outage length. ioredis emits
 * 'error' on every reconnect attempt (backoff capped at 2 s, connection.ts); those are counted,
 * never logged one by one, so an outage of any length costs two lines.
 */
export class OutageLog {
  private readonly lost = new Set<string>();
  private readonly connected = new Set<string>();
  private since: number | undefined;
  private attempts = 0;

  constructor(
    private readonly log: OutageLogger,
    private readonly target: string,
  ) {}

  /** True from the first connection lost until all are back: repeated failures then say nothing new. */
  get down(): boolean {
    return this.lost.size > 0;
  }

  /** Watches one connection; `name` tells connections apart in the lines (`herald-broker`). */
  watch(redis: RedisClient, name: string): void {
    let lastError: Error | undefined;
    // The listener also keeps an 'error' event from crashing the process (no listener = throw).
    redis.on('error', (error: Error) => {
      lastError = error;
      if (this.lost.size > 0) this.attempts += 1;
    });
    // 'reconnecting', not 'close': a deliberate quit/disconnect closes without reconnecting.
    redis.on('reconnecting', () => {
      this.markLost(name, lastError);
      lastError = undefined;
    });
    redis.on('ready', () => {
      lastError = undefined;
      this.markBack(name);
    });
  }

  private markLost(name: string, cause: Error | undefined): void {
    if (this.lost.has(name)) return;
    this.lost.add(name);
    if (this.lost.size > 1) return;
    this.since = Date.now();
    this.attempts = 0;
    const everConnected = this.connected.size > 0;
    this.log.warn(
      { redis: this.target, connection: name, ...(cause ? { error: loggableError(cause) } : {}) },
      everConnected
        ? `Redis at ${this.target} lost; refusing requests that need it until it is back`
        : `waiting for Redis at ${this.target}`,
    );
  }

  private markBack(name: string): void {
    this.connected.add(name);
    if (!this.lost.delete(name) || this.lost.size > 0 || this.since === undefined) return;
    const outageMs = Date.now() - this.since;
    this.since = undefined;
    this.log.info(
      { redis: this.target, outageMs, reconnectAttempts: this.attempts },
      `Redis at ${this.target} is back after ${(outageMs / 1000).toFixed(1)} s`,
    );
  }
}

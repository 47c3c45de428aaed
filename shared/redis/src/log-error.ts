import { RedisUnavailableError } from './deadline.js';

/** What a log line keeps of an error met on a Redis connection (under pino's `err` key). */
export interface LoggedError {
  readonly type: string;
  readonly message: string;
  readonly code?: string;
}

/**
 * Name, message and code only. ioredis attaches the failed command to its errors, and for a
 * script that is the whole script and every argument (payloads); a connection error's stack is
 * ioredis internals, the same on every line.
 */
export function loggableError(error: unknown): LoggedError {
  if (!(error instanceof Error)) return { type: typeof error, message: String(error) };
  const code = (error as NodeJS.ErrnoException).code;
  return { type: error.name, message: error.message, ...(typeof code === 'string' ? { code } : {}) };
}

/** Socket-level failures: Redis down, restarting, or not reachable over the network. */
const CONNECTION_CODES = new Set([
  'ECONNREFUSED',
  'ECONNRESET',
  'ETIMEDOUT',
  'EPIPE',
  'ENOTFOUND',
  'EHOSTUNREACH',
  'ENETUNREACH',
  'EAI_AGAIN',
]);

/**
 * True for an error that only says "Redis is unreachable" (a socket error, a closed or offline
 * connection, a fail-fast refusal): it repeats on every reconnect attempt and every command of
 * an outage, which `OutageLog` reports once, so callers need not log it.
 */
export function isConnectionError(error: unknown): boolean {
  if (error instanceof RedisUnavailableError) return true;
  if (!(error instanceof Error)) return false;
  const code = (error as NodeJS.ErrnoException).code;
  if (typeof code === 'string' && CONNECTION_CODES.has(code)) return true;
  return /Connection is closed|Stream isn't writeable|MaxRetriesPerRequest/.test(error.message);
}

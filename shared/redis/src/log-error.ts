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
 * ioredis internals, the same on every line. Log it under `error`, not `err`: pino's `err`
 * serializer takes any object with a message for an Error and rewrites it as
 * `{type: "Object", stack: ""}` (shared/redis/test/outage-log.test.ts).
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
  // ioredis aborts a pipeline's commands when its connection closes mid-way (AbortError).
  return /Connection is closed|Stream isn't writeable|MaxRetriesPerRequest|Command aborted due to connection close/.test(
    error.message,
  );
}

/**
 * Redis's answer when it runs but cannot serve: a restart still loading its data (LOADING), a
 * primary turned replica by a failover (READONLY), a replica without its primary (MASTERDOWN).
 * An error reply starts with its code (RESP "simple errors").
 */
const NOT_SERVING_CODES = new Set(['LOADING', 'READONLY', 'MASTERDOWN']);

function replyCodeOf(error: Error): string | undefined {
  if (error.name !== 'ReplyError') return undefined;
  const end = error.message.indexOf(' ');
  return end < 0 ? error.message : error.message.slice(0, end);
}

/**
 * The typed form of a failure that means "Redis could not serve it" (the command was not done
 * and may be retried), or undefined for any other error (a failed script, a bug): a connection
 * error (`isConnectionError`), a Redis that cannot serve now, a fail-fast refusal as is.
 */
export function asRedisUnavailable(error: unknown): RedisUnavailableError | undefined {
  if (error instanceof RedisUnavailableError) return error;
  if (!(error instanceof Error)) return undefined;
  if (isConnectionError(error))
    return new RedisUnavailableError('disconnected', error.message, { cause: error });
  const code = replyCodeOf(error);
  if (code !== undefined && NOT_SERVING_CODES.has(code)) {
    return new RedisUnavailableError('not-serving', error.message, { cause: error });
  }
  // Refused before it changed anything: a command, or a script's first write (Redis never stops
  // a script once it has written), while used memory is above maxmemory (noeviction).
  if (code === 'OOM') return new RedisUnavailableError('full', error.message, { cause: error });
  return undefined;
}

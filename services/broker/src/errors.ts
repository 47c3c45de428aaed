import { isConnectionError } from '@herald/redis';

/**
 * Typed errors of the broker, each with a code and the HTTP status the edge maps it to
 * (fastify's FST_ERR_* habit). Routes never invent status codes for domain failures.
 */
export class BrokerError extends Error {
  override readonly name: string = 'BrokerError';
  constructor(
    readonly code: string,
    readonly statusCode: number,
    message: string,
  ) {
    super(message);
  }
}

export const invalidRequest = (message: string) =>
  new BrokerError('HERALD_BROKER_INVALID_REQUEST', 400, message);

export const notFound = (message: string) => new BrokerError('HERALD_BROKER_NOT_FOUND', 404, message);

/** A push that would exceed the queue's maxSize: nothing of that queue's items is stored. */
export const queueFull = (queue: string, size: number, maxSize: number) =>
  new BrokerError(
    'HERALD_BROKER_QUEUE_FULL',
    429,
    `Queue '${queue}' is full: ${size} of maxSize ${maxSize} messages not yet resolved`,
  );

export const maintenanceMode = () =>
  new BrokerError('HERALD_BROKER_MAINTENANCE', 503, 'Broker is in maintenance mode: pushes are refused');

export const storageUnavailable = (cause: unknown) =>
  new BrokerError(
    'HERALD_BROKER_STORAGE_UNAVAILABLE',
    503,
    `Storage unavailable: ${cause instanceof Error ? cause.message : String(cause)}`,
  );

/** Redis answering but unable to serve: a restart still loading its data, a replica after a failover. */
const NOT_SERVING = /^(LOADING|READONLY)\b/;

/**
 * The 503 for an error that means "Redis could not serve it" (the request was not done and may
 * be retried), or undefined for any other error. The storage's connection refuses commands
 * with a typed `RedisUnavailableError` during an outage (docs/broker.md, "Outages").
 */
export function asStorageUnavailable(error: Error): BrokerError | undefined {
  return isConnectionError(error) || NOT_SERVING.test(error.message) ? storageUnavailable(error) : undefined;
}

/**
 * The queue has had encryptionEnabled turned on since this node last read the option, and the
 * push carried clear payloads: nothing was stored (encryption.ts re-reads the option and retries).
 */
export const ENCRYPTION_CHANGED = 'HERALD_BROKER_ENCRYPTION_CHANGED';
export const encryptionChanged = (queue: string) =>
  new BrokerError(
    ENCRYPTION_CHANGED,
    409,
    `Queue '${queue}' had encryptionEnabled turned on during the push: nothing was stored, retry it`,
  );

/** Transactions spanning queues need one Lua script over several hash slots. */
export const crossSlotTransaction = () =>
  new BrokerError(
    'HERALD_BROKER_CROSS_SLOT_TRANSACTION',
    400,
    'A transaction may only touch one queue when the broker runs on Redis Cluster',
  );

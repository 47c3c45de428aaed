import { HeraldError, type HeraldErrorOptions } from '@herald/errors';
import { asRedisUnavailable } from '@herald/redis';

/**
 * Typed errors of the broker, each with a `HERALD_BROKER_*` code and the HTTP status the edge
 * maps it to (`@herald/errors`; codes in docs/contracts.md, "Errors"). Routes never invent status
 * codes for domain failures. A 4xx message is shown to the client; a 5xx one only when it is a
 * fixed text written for clients (`expose: true`).
 */
export class BrokerError extends HeraldError {
  override readonly name = 'BrokerError';
  constructor(
    code: `HERALD_BROKER_${string}`,
    statusCode: number,
    message: string,
    options: HeraldErrorOptions = {},
  ) {
    super(code, statusCode, message, options);
  }
}

export const invalidRequest = (message: string) =>
  new BrokerError('HERALD_BROKER_INVALID_REQUEST', 400, message);

/** A body that is not JSON (routes/common.ts parses every body); `reason` is the parser's message. */
export const invalidJson = (reason: string) =>
  new BrokerError('HERALD_BROKER_INVALID_JSON', 400, `Invalid JSON body: ${reason}`);

/** A body nesting deeper than `maxDepth` (json-depth.ts), refused before it is parsed. */
export const tooDeep = (maxDepth: number, offset: number) =>
  new BrokerError(
    'HERALD_BROKER_TOO_DEEP',
    400,
    `Body nests arrays/objects more than ${maxDepth} deep (at offset ${offset})`,
  );

export const notFound = (message: string) => new BrokerError('HERALD_BROKER_NOT_FOUND', 404, message);

/** A push that would exceed the queue's maxSize: nothing of that queue's items is stored. */
export const queueFull = (queue: string, size: number, maxSize: number) =>
  new BrokerError(
    'HERALD_BROKER_QUEUE_FULL',
    429,
    `Queue '${queue}' is full: ${size} of maxSize ${maxSize} messages not yet resolved`,
  );

/** A request over a tenant's limit (tenant-limits.ts): nothing of it was applied; retry after `retryAfterMs`. */
export const limitExceeded = (message: string, retryAfterMs: number | undefined) =>
  new BrokerError('HERALD_BROKER_LIMIT_EXCEEDED', 429, message, { retryAfterMs });

/** A request that alone exceeds a tenant's whole budget: it never fits, split it. */
export const limitTooLarge = (message: string) =>
  new BrokerError('HERALD_BROKER_LIMIT_TOO_LARGE', 400, message);

/** The admin route keeps at most `max` limit overrides. */
export const tooManyOverrides = (max: number) =>
  new BrokerError(
    'HERALD_BROKER_TOO_MANY_OVERRIDES',
    409,
    `At most ${max} limit overrides are kept: delete one first`,
  );

export const maintenanceMode = () =>
  new BrokerError('HERALD_BROKER_MAINTENANCE', 503, 'Broker is in maintenance mode: pushes are refused', {
    expose: true,
  });

/**
 * A large body (or a pop's answer of large messages) that found no room in the node's budget of
 * bodies in flight within its wait (body-budget.ts): not read or not popped, nothing done; retry
 * (Queen's clients retry a 5xx).
 */
export const busy = (budgetBytes: number, waitMs: number) =>
  new BrokerError(
    'HERALD_BROKER_BUSY',
    503,
    `Broker node busy: request bodies in flight fill its ${budgetBytes}-byte budget (waited ${waitMs} ms); retry later`,
    { expose: true, retryAfterMs: 1000 },
  );

/**
 * Redis could not serve the request: it was not done and may be retried (docs/broker-operations.md,
 * "Outages"). A fixed text: the cause names the Redis address, and is for the log only.
 */
const storageUnavailable = (cause: unknown) =>
  new BrokerError('HERALD_BROKER_STORAGE_UNAVAILABLE', 503, 'Storage unavailable; retry later', {
    cause,
    expose: true,
  });

/**
 * Redis refused a write because it is full (used memory above `maxmemory`, the `noeviction`
 * policy the broker needs): nothing was done; retry once consumers and retention freed memory
 * (docs/broker-operations.md, "Redis full").
 */
export const STORAGE_FULL = 'HERALD_BROKER_STORAGE_FULL';
const storageFull = (cause: unknown) =>
  new BrokerError(
    STORAGE_FULL,
    503,
    'Storage full: Redis reached its maxmemory; nothing was stored; retry later',
    { cause, expose: true, retryAfterMs: 1000 },
  );

/** The 503 for a storage failure that means "not done, retry" (`asRedisUnavailable`), or undefined. */
export function asStorageUnavailable(error: unknown): BrokerError | undefined {
  const unavailable = asRedisUnavailable(error);
  if (!unavailable) return undefined;
  return unavailable.reason === 'full' ? storageFull(unavailable) : storageUnavailable(unavailable);
}

/**
 * BROKER_MIN_REPLICAS_ACK: the write was applied on the Redis primary, but fewer replicas than
 * required confirmed it within the timeout (docs/broker-topologies.md, "Replica acknowledgement"). It may or
 * may not survive a failover; a retry is safe (push dedups by transactionId, acks repeat).
 */
export const replicationTimeout = (acknowledged: number, required: number, timeoutMs: number) =>
  new BrokerError(
    'HERALD_BROKER_REPLICATION_TIMEOUT',
    503,
    `Written on the Redis primary, but ${acknowledged} of the ${required} required replicas confirmed it within ${timeoutMs} ms: it may not survive a failover; retrying is safe`,
    { expose: true },
  );

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

/** A push to, or a configuration of, an encrypted queue on a broker with no key (encryption.ts). */
export const encryptionKeyMissing = (queue: string) =>
  new BrokerError(
    'HERALD_BROKER_ENCRYPTION_KEY_MISSING',
    409,
    `Queue '${queue}': encryptionEnabled needs a key and this broker has none (QUEEN_ENCRYPTION_KEY): refused rather than stored in clear`,
  );

/**
 * A stored message that does not decrypt (encryption.ts). Not the client's doing: the key was
 * removed from the node, or the stored bytes were altered. Shown to the client (fixed texts naming
 * a key id, a fingerprint, never key material): it tells the operator which key to put back.
 */
export const undecryptable = (queue: string, why: string) =>
  new BrokerError(
    'HERALD_BROKER_DECRYPTION_FAILED',
    500,
    `A message of queue '${queue}' cannot be decrypted: ${why}`,
    { expose: true },
  );

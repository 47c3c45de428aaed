import { invalidRequest } from './errors.js';

/**
 * Every fixed bound on what a request may carry, in one place; docs/broker-api.md "Limits" lists each
 * with its value. The body and payload sizes are configurable (BROKER_BODY_LIMIT_BYTES,
 * BROKER_MAX_PAYLOAD_BYTES in config.ts). Lists are bounded so one request's work and storage stay linear in its size
 * and small; strings so keys and log lines stay small.
 */
export const LIMITS = {
  /** Queue, partition, group, transaction, trace, lease and worker ids, trace names. */
  maxNameLength: 512,
  maxPushItems: 10_000,
  maxBatch: 10_000,
  maxPartitionsPerPop: 1000,
  /** Queues one `GET /api/v1/pop?namespace&task` tries (and long-polls on), in name order. */
  maxQueuesPerFilteredPop: 100,
  maxTimeoutMs: 600_000,
  maxAcks: 10_000,
  /** After flattening: each item of a push operation counts as one operation. */
  maxTransactionOperations: 10_000,
  maxLeaseExtensionSeconds: 86_400,
  /** The `error` text of an ack. */
  maxAckErrorLength: 64 * 1024,
  maxTraceNames: 100,
  /** A trace's `data`, serialized. */
  maxTraceDataBytes: 64 * 1024,
  maxDlqIds: 10_000,
  /** `GET /api/v1/status/queues/:queue/messages`: page size and offset (each partition reads offset + limit). */
  maxStatusMessages: 1000,
  maxStatusMessagesOffset: 10_000,
  /** `GET /api/v1/status/queues`: page size and offset. */
  maxStatusQueues: 10_000,
  maxStatusQueuesOffset: 1_000_000,
  /**
   * Detailed views (queue detail, a group's partitions, lagging partitions), per queue:
   * partitions read, messages counted per partition and group (a larger lag shows as this
   * many), and newest dead letters counted per partition.
   */
  maxDetailedPartitions: 1000,
  partitionLagCount: 10_000,
  /** Messages one detailed view counts in all; past it, one per partition and group (its oldest). */
  detailedViewCountBudget: 100_000,
  partitionDeadLettersRead: 10_000,
  /** A queue's `bridgeTopic` template, and each topic of a transaction's `publish` operation. */
  maxTopicTemplateLength: 2048,
  /** Topics of one `publish` operation of a transaction. */
  maxPublishTopics: 100,
  /** The SSE event type of a `publish` operation. */
  maxEventTypeLength: 256,
  /** Arrays and objects inside one another, anywhere in a body (payloads included). */
  maxJsonDepth: 100,
  /** Latest seek/subscription time: the last instant a JavaScript Date can hold. */
  maxTimestampMs: 8.64e15,
  /** A path parameter as sent: a maximal name, each UTF-16 unit as up to 9 characters (%XX×3). */
  maxPathParamLength: 512 * 9,
} as const;

export type Json = Record<string, unknown>;

export function isObject(value: unknown): value is Json {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

export function requireObject(value: unknown, what: string): Json {
  if (!isObject(value)) throw invalidRequest(`${what} must be a JSON object`);
  return value;
}

/**
 * A lone UTF-16 surrogate: no UTF-8 spelling exists, so `encodeURIComponent` (Redis key names)
 * throws and Redis would store U+FFFD instead. `String#isWellFormed` is Node 20's answer, but
 * not in the ES2023 typings this repo compiles against.
 */
const LONE_SURROGATE = /[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/;
const LONE_SURROGATES = new RegExp(LONE_SURROGATE.source, 'g');

/** `value` with each lone surrogate replaced by U+FFFD, as Redis stores it (`String#toWellFormed`). */
export function wellFormed(value: string): string {
  return value.replace(LONE_SURROGATES, '\ufffd');
}

/** A string of at most `max` characters, refused when it cannot be spelled in UTF-8. */
export function boundedString(value: string, what: string, max: number): string {
  if (value.length > max) throw invalidRequest(`${what} must be at most ${max} characters`);
  if (LONE_SURROGATE.test(value)) throw invalidRequest(`${what} must be well-formed Unicode`);
  return value;
}

/** A queue, partition or group name: a non-empty string of bounded length. */
export function name(value: unknown, what: string): string {
  if (typeof value !== 'string') throw invalidRequest(`${what} must be a string`);
  if (value.length === 0) throw invalidRequest(`${what} must not be empty`);
  return boundedString(value, what, LIMITS.maxNameLength);
}

/** An array of at most `max` entries. */
export function list(value: unknown, what: string, max: number): unknown[] {
  if (!Array.isArray(value)) throw invalidRequest(`${what} must be an array`);
  if (value.length > max) throw invalidRequest(`${what} must hold at most ${max} entries`);
  return value;
}

export function optionalName(value: unknown, what: string): string | undefined {
  return value === undefined || value === null ? undefined : name(value, what);
}

export function optionalString(
  value: unknown,
  what: string,
  max: number = LIMITS.maxNameLength,
): string | null {
  if (value === undefined || value === null || value === '') return null;
  if (typeof value !== 'string') throw invalidRequest(`${what} must be a string`);
  return boundedString(value, what, max);
}

/** An integer query/body value within bounds; undefined → fallback. */
export function integer(value: unknown, what: string, fallback: number, min: number, max: number): number {
  if (value === undefined || value === '') return fallback;
  const number = typeof value === 'string' ? Number(value) : value;
  if (typeof number !== 'number' || !Number.isInteger(number) || number < min || number > max) {
    throw invalidRequest(`${what} must be an integer between ${min} and ${max}`);
  }
  return number;
}

export function booleanParam(value: unknown, what: string, fallback: boolean): boolean {
  if (value === undefined || value === '') return fallback;
  if (value === true || value === 'true' || value === '1') return true;
  if (value === false || value === 'false' || value === '0') return false;
  throw invalidRequest(`${what} must be true or false`);
}

/**
 * A point in time, ISO 8601 text or epoch milliseconds, between 1970 and the last instant a
 * Date holds: it becomes a Redis stream position (`<ms>-<seq>`), which must be a whole,
 * non-negative millisecond count.
 */
export function timestamp(value: unknown, what: string): number {
  const ms = typeof value === 'number' ? value : typeof value === 'string' ? Date.parse(value) : Number.NaN;
  if (!Number.isFinite(ms)) throw invalidRequest(`${what} must be an ISO 8601 time`);
  if (!Number.isInteger(ms) || ms < 0 || ms > LIMITS.maxTimestampMs) {
    throw invalidRequest(
      `${what} must be a whole number of milliseconds between 0 and ${LIMITS.maxTimestampMs} (1970 to 275760)`,
    );
  }
  return ms;
}

import { invalidRequest } from './errors.js';

/** Documented bounds (docs/broker.md). */
export const LIMITS = {
  maxNameLength: 512,
  maxPushItems: 10_000,
  maxPayloadBytes: 1024 * 1024,
  maxBatch: 10_000,
  maxPartitionsPerPop: 1000,
  maxTimeoutMs: 600_000,
  maxAcks: 10_000,
  maxTransactionOperations: 10_000,
  maxLeaseExtensionSeconds: 86_400,
  bodyLimitBytes: 16 * 1024 * 1024,
} as const;

export type Json = Record<string, unknown>;

export function isObject(value: unknown): value is Json {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

export function requireObject(value: unknown, what: string): Json {
  if (!isObject(value)) throw invalidRequest(`${what} must be a JSON object`);
  return value;
}

/** A queue, partition or group name: a non-empty string of bounded length. */
export function name(value: unknown, what: string): string {
  if (typeof value !== 'string') throw invalidRequest(`${what} must be a string`);
  if (value.length === 0) throw invalidRequest(`${what} must not be empty`);
  if (value.length > LIMITS.maxNameLength) {
    throw invalidRequest(`${what} must be at most ${LIMITS.maxNameLength} characters`);
  }
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
  if (value.length > max) throw invalidRequest(`${what} must be at most ${max} characters`);
  return value;
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

export function timestamp(value: unknown, what: string): number {
  const ms = typeof value === 'number' ? value : typeof value === 'string' ? Date.parse(value) : Number.NaN;
  if (!Number.isFinite(ms)) throw invalidRequest(`${what} must be an ISO 8601 time`);
  return ms;
}

import { randomBytes } from 'node:crypto';

/** A key prefix of its own for one test, so tests sharing a Redis never see each other's keys. */
export function uniquePrefix(label = 'test'): string {
  return `herald-${label}-${randomBytes(6).toString('hex')}:`;
}

import { createHash } from 'node:crypto';
import { v7 as uuidv7 } from 'uuid';

/** Time-ordered message, lease and transaction ids (UUIDv7, broker.md). */
export const newId = (): string => uuidv7();

/**
 * A partition's id: a name-based UUID (SHA-1, RFC 9562 version 5 layout) of queue and
 * partition, so every node derives the same id without a lookup.
 */
export function partitionIdOf(queue: string, partition: string): string {
  const hash = createHash('sha1').update(queue).update('\0').update(partition).digest();
  hash[6] = ((hash[6] as number) & 0x0f) | 0x50;
  hash[8] = ((hash[8] as number) & 0x3f) | 0x80;
  const hex = hash.subarray(0, 16).toString('hex');
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20)}`;
}

/** Queen's namespace/task split: `namespace.task.rest`. */
export function namespaceAndTask(queue: string): { namespace: string; task: string } {
  const [namespace = '', task = ''] = queue.split('.');
  return { namespace, task };
}

/** The stream position just before `ms`: a group positioned here reads messages from `ms` on. */
export function positionBefore(ms: number): string {
  return ms <= 0 ? '0-0' : `${ms - 1}-18446744073709551615`;
}

/** Milliseconds of a stream id `ms-seq`. */
export function streamIdTime(id: string): number {
  return Number(id.slice(0, id.indexOf('-')));
}

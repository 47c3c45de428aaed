import { createHash } from 'node:crypto';
import { uuidv7 } from '@herald/ids';

/**
 * Time-ordered message, lease and transaction ids (UUIDv7, RFC 9562, docs/broker-api.md): the generator
 * both services share.
 */
export const newId: () => string = uuidv7;

/**
 * A partition's id: a name-based UUID (SHA-1, RFC 9562 version 5 layout) of queue and
 * partition, so every node derives the same id without a lookup.
 */
export function partitionIdOf(queue: string, partition: string): string {
  const key = `${queue}\0${partition}`;
  const known = partitionIds.get(key);
  if (known) return known;
  // Bounded: a process seeing more partitions than this recomputes (cheap) instead of growing.
  if (partitionIds.size >= PARTITION_ID_CACHE_SIZE) partitionIds.clear();
  const id = computePartitionId(queue, partition);
  partitionIds.set(key, id);
  return id;
}

/** Every push item needs its partition's id: one SHA-1 per item showed in the push profile. */
const PARTITION_ID_CACHE_SIZE = 100_000;
const partitionIds = new Map<string, string>();

function computePartitionId(queue: string, partition: string): string {
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

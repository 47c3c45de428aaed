import { createHash, randomFillSync } from 'node:crypto';

const HEX = Array.from({ length: 256 }, (_, byte) => byte.toString(16).padStart(2, '0'));
const hex = (byte: number): string => HEX[byte] as string;
/** Random bytes drawn in blocks: one `randomFillSync` per 682 ids instead of one per id. */
const pool = Buffer.alloc(4096);
let poolOffset = pool.length;
let lastMs = -1;
let sequence = 0;

function randomBytes(count: number): number {
  if (poolOffset + count > pool.length) {
    randomFillSync(pool);
    poolOffset = 0;
  }
  const offset = poolOffset;
  poolOffset += count;
  return offset;
}

/**
 * Time-ordered message, lease and transaction ids (UUIDv7, RFC 9562, broker.md). Monotonic
 * within a process as uuid's v7 is: a 31-bit counter, seeded at random each millisecond,
 * fills rand_a and the top of rand_b; the rest is random. Written out here because the
 * per-id cost of the uuid package (one randomFillSync per id) showed in the push profile.
 */
export function newId(): string {
  let ms = Date.now();
  if (ms > lastMs) {
    const at = randomBytes(4);
    sequence = pool.readUInt32BE(at) >>> 1;
    lastMs = ms;
  } else {
    sequence = (sequence + 1) | 0;
    if (sequence > 0x7fffffff || sequence < 0) {
      // Counter exhausted within one millisecond: borrow the next one (uuid does the same).
      lastMs += 1;
      const at = randomBytes(4);
      sequence = pool.readUInt32BE(at) >>> 1;
    }
    ms = lastMs;
  }
  const at = randomBytes(6);
  const high = Math.floor(ms / 0x10000);
  const low = ms % 0x10000;
  return (
    hex((high >>> 24) & 0xff) +
    hex((high >>> 16) & 0xff) +
    hex((high >>> 8) & 0xff) +
    hex(high & 0xff) +
    '-' +
    hex((low >>> 8) & 0xff) +
    hex(low & 0xff) +
    '-' +
    hex(0x70 | ((sequence >>> 27) & 0x0f)) +
    hex((sequence >>> 19) & 0xff) +
    '-' +
    hex(0x80 | ((sequence >>> 13) & 0x3f)) +
    hex((sequence >>> 5) & 0xff) +
    '-' +
    hex(((sequence << 3) & 0xf8) | ((pool[at] as number) & 0x07)) +
    hex(pool[at + 1] as number) +
    hex(pool[at + 2] as number) +
    hex(pool[at + 3] as number) +
    hex(pool[at + 4] as number) +
    hex(pool[at + 5] as number)
  );
}

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

import type { Redis } from '@herald/redis';
import { decodeUpdate, type Position, type StoredUpdate } from './update.js';

/** A history stream entry as ioredis returns it: the position and the field list (`u`, update). */
export type StreamEntry = [Position, string[]];

export function decodeEntry([position, fields]: StreamEntry): StoredUpdate {
  const index = fields.indexOf('u');
  return decodeUpdate(position, fields[index + 1] as string);
}

/** Entries with `after < position <= upTo` (after undefined: from the oldest), at most `limit`. */
export async function readEntries(
  redis: Redis,
  history: string,
  after: Position | undefined,
  upTo: Position | '+',
  limit: number,
): Promise<StreamEntry[]> {
  return (await redis.xrange(
    history,
    after === undefined ? '-' : `(${after}`,
    upTo,
    'COUNT',
    limit,
  )) as StreamEntry[];
}

/** The newest entry of the history, if any. */
export async function readNewestEntry(redis: Redis, history: string): Promise<StreamEntry | undefined> {
  const tail = (await redis.xrevrange(history, '+', '-', 'COUNT', 1)) as StreamEntry[];
  return tail[0];
}

import type { RedisClient } from '@herald/redis';
import { type Cursor, comparePositions, decodeUpdate, type Position, type StoredUpdate } from './update.js';

/** A history stream entry as ioredis returns it: the position and the field list (`u`, update). */
export type StreamEntry = [Position, string[]];

export function decodeEntry([position, fields]: StreamEntry, partition = 0): StoredUpdate {
  const index = fields.indexOf('u');
  return decodeUpdate(position, fields[index + 1] as string, partition);
}

/** Entries with `after < position <= upTo` (after undefined: from the oldest), at most `limit`. */
export async function readEntries(
  redis: RedisClient,
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
export async function readNewestEntry(redis: RedisClient, history: string): Promise<StreamEntry | undefined> {
  const tail = (await redis.xrevrange(history, '+', '-', 'COUNT', 1)) as StreamEntry[];
  return tail[0];
}

function millisecondsOf(position: Position): number {
  return Number(position.slice(0, position.indexOf('-')));
}

/**
 * The merge order of copies from several partitions: by time (the ms of the position, Redis TIME
 * at publish), then partition, then position. Within a partition it is the stream order.
 */
export function compareMerged(a: StoredUpdate, b: StoredUpdate): number {
  const byTime = millisecondsOf(a.position) - millisecondsOf(b.position);
  if (byTime !== 0) return byTime;
  if (a.partition !== b.partition) return a.partition - b.partition;
  return comparePositions(a.position, b.position);
}

export interface MergedRead {
  /** History stream of each partition (index = partition). */
  readonly histories: readonly string[];
  readonly partitions: readonly number[];
  /** Per partition, read after this position (undefined: from the oldest). */
  readonly after: Cursor | undefined;
  /** Per partition, up to this position (undefined: to the newest). */
  readonly upTo: Cursor | undefined;
  readonly limit: number;
  /** Decodes an entry of a partition (the transport adds what it knows of the topics). */
  readonly decode: (entry: StreamEntry, partition: number) => StoredUpdate;
}

/**
 * The first `limit` entries of several partitions merged by `compareMerged`: `limit` entries read
 * from each partition hold every entry of the merged first `limit`, so pages chain by moving the
 * cursor past the last entry of each partition returned.
 */
export async function readMerged(redis: RedisClient, read: MergedRead): Promise<StoredUpdate[]> {
  const pages = await Promise.all(
    read.partitions.map(async (partition) => {
      const entries = await readEntries(
        redis,
        read.histories[partition] as string,
        read.after?.[partition],
        read.upTo?.[partition] ?? '+',
        read.limit,
      );
      return entries.map((entry) => read.decode(entry, partition));
    }),
  );
  if (pages.length === 1) return pages[0] as StoredUpdate[];
  return pages.flat().sort(compareMerged).slice(0, read.limit);
}

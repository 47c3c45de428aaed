/*
 * Stream reads of the views (message list, status view, dead letters) a few entries at a time,
 * within a budget of bytes. A stream entry comes whole (there is no read of its id alone), and
 * the views read many: the message list up to 1,000 entries, the status view offset + limit
 * (up to 11,000) of every partition and 10,000 dead letters, a dead-letter page up to
 * 1,001,000, each in one XRANGE. With large messages one request read gigabytes: Redis built the
 * reply while serving nobody else and the node held all of it (docs/security.md, "Broker
 * limits").
 */
import type { ReadBudget } from '../view-budget.js';
import type { RedisBackend } from './context.js';
import { LARGE_RECORD_BYTES } from './record-sizes.js';

type StreamEntry = [id: string, fields: string[]];

/** Entries one read asks for at most. */
const READ_ENTRIES = 1000;
/** What one read aims at (bytes): its entry count follows the average size seen so far. */
const READ_BYTES = 1024 * 1024;
/** The first read's entry count where the queue holds no record of LARGE_RECORD_BYTES or more. */
const FIRST_READ_ENTRIES = 16;

/** The bytes an entry takes in a reply, about: its id and its fields. */
function entryBytes([id, fields]: StreamEntry): number {
  let bytes = id.length;
  for (const field of fields) bytes += field.length;
  return bytes;
}

/**
 * Up to `count` entries of the stream at `key` from `start` to `end` (XRANGE; XREVRANGE with
 * `reverse`, `start` then the higher id), read a few at a time: each read asks for as many as
 * fit READ_BYTES at the average size seen (one at first where the queue holds large records),
 * at most READ_ENTRIES. `keep` sees every entry read and says which are kept; their bytes count
 * against `budget`, the others are dropped as read. Stops at `count` kept, at the end of the
 * range, after `scan` entries read, or once `budget` is full or drained (then
 * `budget.exhausted`); with `scanToEnd`, it reads on past `count` and a full budget to the end of
 * the range (for `keep` to count what it sees), keeping nothing more, until the budget is drained.
 */
export async function readRange(
  backend: RedisBackend,
  key: string,
  options: {
    readonly start: string;
    readonly end: string;
    readonly count: number;
    readonly reverse?: boolean;
    readonly budget: ReadBudget;
    readonly keep?: (entry: StreamEntry) => boolean;
    readonly scanToEnd?: boolean;
    /** Entries read at most (kept or not). */
    readonly scan?: number;
  },
): Promise<StreamEntry[]> {
  const { end, count, reverse = false, budget, keep = () => true, scanToEnd = false } = options;
  const scan = options.scan ?? Number.POSITIVE_INFINITY;
  const kept: StreamEntry[] = [];
  const large = backend.recordSizes.largest([key]) >= LARGE_RECORD_BYTES;
  let start = options.start;
  let seenBytes = 0;
  let seen = 0;
  let full = count <= 0;
  while ((scanToEnd || !full) && seen < scan) {
    if (budget.drained || (!scanToEnd && budget.full)) {
      budget.exhausted = true;
      break;
    }
    const fit =
      seen === 0
        ? large
          ? 1
          : FIRST_READ_ENTRIES
        : Math.max(1, Math.min(READ_ENTRIES, Math.floor((READ_BYTES * seen) / Math.max(1, seenBytes))));
    const want = Math.min(fit, scan - seen);
    const entries = await backend.read<StreamEntry[]>(key, reverse ? 'xrevrange' : 'xrange', [
      start,
      end,
      'COUNT',
      want,
    ]);
    for (const entry of entries) {
      const bytes = entryBytes(entry);
      seen += 1;
      seenBytes += bytes;
      budget.spend(bytes);
      if (!keep(entry) || full) continue;
      if (budget.full) {
        budget.exhausted = true;
        full = true;
        continue;
      }
      kept.push(entry);
      budget.hold(bytes);
      full = kept.length >= count;
    }
    const last = entries.at(-1);
    if (!last || entries.length < want) break;
    start = `(${last[0]}`;
  }
  return kept;
}

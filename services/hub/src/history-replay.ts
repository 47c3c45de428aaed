import type { FastifyBaseLogger } from 'fastify';
import { TransportUnavailableError } from './errors.js';
import type { Subscriber } from './subscriber.js';
import type { Transport } from './transport.js';
import { advanceCursor, type Cursor, ORIGIN_POSITION, type StoredUpdate } from './update.js';

const REPLAY_PAGE = 1000;

/** Where a replay starts, and the id a subscribe response names as the one before its first event. */
export interface ReplayStart {
  /** Replay entries after this cursor; undefined: from the oldest entry in history. */
  readonly after: Cursor | undefined;
  /** The `Last-Event-ID` response header: the cursor when found in history, else `earliest`. */
  readonly precedingId: string;
}

/**
 * Resolves a subscribe cursor (Last-Event-ID) against the history. An id no longer (or never) in
 * history replays from the earliest entry (hub.md, history), and so does a lookup that failed for
 * another reason than an unavailable backend: the subscriber gets more than it asked for, never
 * less. A backend that cannot serve the lookup rejects (TransportUnavailableError: the subscribe
 * answers 503 and the client retries). A found cursor also tells the subscriber to drop live
 * updates up to it (they precede the cursor).
 */
export async function resolveCursor(
  transport: Pick<Transport, 'findPosition'>,
  subscriber: Subscriber,
  cursor: string,
  log: FastifyBaseLogger,
): Promise<ReplayStart> {
  if (cursor === 'earliest') return { after: undefined, precedingId: 'earliest' };
  try {
    const position = await transport.findPosition(cursor);
    if (position !== undefined) {
      subscriber.skipThrough(position, cursor);
      return { after: position, precedingId: cursor };
    }
  } catch (error) {
    if (error instanceof TransportUnavailableError) throw error;
    log.warn({ err: error }, 'history lookup failed; replaying from the earliest entry');
  }
  return { after: undefined, precedingId: 'earliest' };
}

/**
 * The first page of a replay (history entries after `after`, up to the subscriber's replay
 * snapshot): read before the response's headers are written, so a backend that cannot serve it
 * fails the subscribe as a whole (503) rather than a stream that opens and closes at once.
 */
export function readFirstReplayPage(
  transport: Pick<Transport, 'readHistory'>,
  subscriber: Subscriber,
  after: Cursor | undefined,
): Promise<StoredUpdate[]> {
  return transport.readHistory(
    after,
    subscriber.replaySnapshot as Cursor,
    REPLAY_PAGE,
    subscriber.partitions,
  );
}

/**
 * Writes `firstPage` and the history entries after it up to the subscriber's replay snapshot
 * (taken when it was registered: later updates reach it live), page by page, then lets its
 * buffered live updates through. `onWritten` hears how many events each page wrote; rejects when
 * the history cannot be read (the live updates stay buffered: the caller closes the stream).
 */
export async function replayHistory(
  transport: Pick<Transport, 'readHistory'>,
  subscriber: Subscriber,
  after: Cursor | undefined,
  firstPage: readonly StoredUpdate[],
  onWritten: (count: number) => void,
): Promise<void> {
  const snapshot = subscriber.replaySnapshot as Cursor;
  let page = firstPage;
  // Pages chain per partition: the next starts after the last entry of each partition read.
  let from = after ?? snapshot.map(() => ORIGIN_POSITION);
  for (;;) {
    let written = 0;
    for (const update of page) if (subscriber.replay(update)) written += 1;
    onWritten(written);
    if (page.length < REPLAY_PAGE || subscriber.closed) break;
    from = page.reduce(advanceCursor, from);
    page = await transport.readHistory(from, snapshot, REPLAY_PAGE, subscriber.partitions);
  }
  subscriber.endReplay();
}

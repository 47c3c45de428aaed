/** An update as published (hub.md, publish). The first topic is canonical, the others alternates. */
export interface Update {
  readonly id: string;
  readonly topics: readonly string[];
  readonly data: string;
  readonly private: boolean;
  readonly type?: string;
  readonly retry?: number;
}

/**
 * A position in the history: a Redis stream entry id `<ms>-<seq>` (the in-process backend
 * generates the same form). Positions are totally ordered and increase with publish order.
 */
export type Position = string;

/**
 * An update together with its history position, as every node sees it: one copy of it, the one in
 * `partition` (docs/hub.md, topic partitions; 0 when there is one partition).
 */
export interface StoredUpdate extends Update {
  readonly position: Position;
  readonly partition: number;
  /**
   * The partition of each topic (same order as `topics`), when the update's topics span several
   * partitions: a subscriber takes the copy of the lowest partition among the topics it matches.
   */
  readonly topicPartitions?: readonly number[];
}

export const ORIGIN_POSITION: Position = '0-0';

/**
 * A place in the whole history: for each partition, the last position it covers (index =
 * partition). With one partition it is one position.
 */
export type Cursor = readonly Position[];

/** Whether the cursor covers this copy (it is at or before the cursor in its partition). */
export function isCovered(cursor: Cursor, update: StoredUpdate): boolean {
  const bound = cursor[update.partition];
  return bound !== undefined && comparePositions(update.position, bound) <= 0;
}

/** The cursor moved past this copy (a copy of the cursor; other partitions unchanged). */
export function advanceCursor(cursor: Cursor, update: StoredUpdate): Cursor {
  const next = [...cursor];
  next[update.partition] = update.position;
  return next;
}

export function comparePositions(a: Position, b: Position): number {
  const dashA = a.indexOf('-');
  const dashB = b.indexOf('-');
  const msA = Number(a.slice(0, dashA));
  const msB = Number(b.slice(0, dashB));
  if (msA !== msB) return msA < msB ? -1 : 1;
  const seqA = Number(a.slice(dashA + 1));
  const seqB = Number(b.slice(dashB + 1));
  return seqA === seqB ? 0 : seqA < seqB ? -1 : 1;
}

/** The wire form inside Redis (stream entries and pub/sub messages): compact JSON. */
export function encodeUpdate(update: Update): string {
  return JSON.stringify([
    update.id,
    update.topics,
    update.data,
    update.private ? 1 : 0,
    update.type ?? null,
    update.retry ?? null,
  ]);
}

export function decodeUpdate(position: Position, text: string, partition = 0): StoredUpdate {
  const [id, topics, data, isPrivate, type, retry] = JSON.parse(text) as [
    string,
    string[],
    string,
    0 | 1,
    string | null,
    number | null,
  ];
  return {
    position,
    partition,
    id,
    topics,
    data,
    private: isPrivate === 1,
    ...(type !== null ? { type } : {}),
    ...(retry !== null ? { retry } : {}),
  };
}

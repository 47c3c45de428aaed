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

/** An update together with its history position, as every node sees it. */
export interface StoredUpdate extends Update {
  readonly position: Position;
}

export const ORIGIN_POSITION: Position = '0-0';

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

export function decodeUpdate(position: Position, text: string): StoredUpdate {
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
    id,
    topics,
    data,
    private: isPrivate === 1,
    ...(type !== null ? { type } : {}),
    ...(retry !== null ? { retry } : {}),
  };
}

/*
 * Stored messages on Redis (the MessageBrowser role; plain commands, but lua/delete-message-1.lua):
 * listing, lookup by id, and Queen's queue-mode status view.
 */
import { streamIdTime } from '../identifiers.js';
import { type MessageBrowser, type MessageView, QUEUE_MODE, type QueueMessageState } from '../storage.js';
import { ReadBudget } from '../view-budget.js';
import { forEachBounded } from './bounded.js';
import { decode, encode, type RedisBackend } from './context.js';
import { entryFields, fieldsOf } from './message-record.js';
import { readRange } from './read-range.js';

/** Dead letters read to mark messages `dead_letter`: the newest ones of the queue's DLQ stream. */
export const STATUS_DEAD_LETTER_SCAN = 10_000;

/** Partitions the status view reads at once. */
const PARTITIONS_IN_FLIGHT = 4;

/** Stream ids `<ms>-<seq>` in order; seq may exceed 2^53 (positionBefore writes 2^64 − 1). */
function compareStreamIds(a: string, b: string): number {
  const [aMs = '0', aSeq = '0'] = a.split('-');
  const [bMs = '0', bSeq = '0'] = b.split('-');
  const byMs = Number(aMs) - Number(bMs);
  if (byMs !== 0) return byMs;
  const aBig = BigInt(aSeq);
  const bBig = BigInt(bSeq);
  return aBig === bBig ? 0 : aBig < bBig ? -1 : 1;
}

/** Newest first (Queen's order), then the page. */
function newestFirstPage(
  rows: { at: number; id: string; row: QueueMessageState }[],
  offset: number,
  limit: number,
): QueueMessageState[] {
  rows.sort((a, b) => b.at - a.at || (a.id < b.id ? 1 : a.id > b.id ? -1 : 0));
  return rows.slice(offset, offset + limit).map((entry) => entry.row);
}

/** A payload as stored (JSON text); text that is not JSON is shown as is. */
export function parseJson(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return text;
  }
}

function messageView(
  queue: string,
  partition: string,
  partitionId: string,
  entry: [string, string[]],
): MessageView {
  const fields = entryFields(entry[1]);
  return {
    id: fields.id,
    transactionId: fields.transactionId,
    traceId: fields.traceId || null,
    queue,
    partition,
    partitionId,
    data: parseJson(fields.data),
    producerSub: fields.producerSub || null,
    createdAt: new Date(streamIdTime(entry[0])).toISOString(),
  };
}

export class RedisMessages implements MessageBrowser {
  constructor(private readonly backend: RedisBackend) {}

  async list(filter: {
    queue: string;
    partition?: string;
    limit: number;
    budget?: ReadBudget;
  }): Promise<MessageView[]> {
    const { backend } = this;
    const base = backend.base(filter.queue);
    const parts = await backend.redis.hgetall(`${base}parts`);
    const names = filter.partition === undefined ? Object.keys(parts) : [encode(filter.partition)];
    const out: MessageView[] = [];
    const budget = filter.budget ?? new ReadBudget();
    for (const name of names.sort()) {
      if (out.length >= filter.limit) break;
      const partitionId = parts[name];
      if (!partitionId) continue;
      const entries = await readRange(backend, `${base}s:${name}`, {
        start: '-',
        end: '+',
        count: filter.limit - out.length,
        budget,
      });
      for (const entry of entries) out.push(messageView(filter.queue, decode(name), partitionId, entry));
      if (budget.exhausted) break;
    }
    return out;
  }

  /**
   * Queen's status view of one queue (read-only, plain commands): for each partition its newest
   * `offset + limit` entries and the queue-mode consumer state (`c:`, `a:` keys, see
   * lua/README.md), merged newest first. The entries' reads stop at VIEW_READ_BYTES in all, and
   * so do those of the dead letters (read-range.ts).
   */
  async states(filter: { queue: string; limit: number; offset: number }): Promise<QueueMessageState[]> {
    const { backend } = this;
    const { redis } = backend;
    const { queue } = filter;
    const base = backend.base(queue);
    const group = encodeURIComponent(QUEUE_MODE);
    // Payloads are dropped as read (only ids are kept). The partitions' reads share one budget,
    // the dead letters have their own: past them the view shows what was read.
    const budget = new ReadBudget();
    const dead = new Set<string>();
    const [parts, start] = await Promise.all([
      redis.hgetall(`${base}parts`),
      redis.hget(`${base}groups`, group),
      readRange(backend, `${base}dlq`, {
        start: '+',
        end: '-',
        reverse: true,
        count: 0,
        scanToEnd: true,
        scan: STATUS_DEAD_LETTER_SCAN,
        budget: new ReadBudget(),
        keep: ([, list]) => {
          const fields = fieldsOf(list);
          if (fields.g === group) dead.add(`${fields.p}\n${fields.sid}`);
          return false;
        },
      }),
    ]);
    const now = backend.clock.now();
    const rows: { at: number; id: string; row: QueueMessageState }[] = [];
    // A few partitions at a time: each read's size is bounded, not the sum of many at once.
    await forEachBounded(Object.entries(parts), PARTITIONS_IN_FLIGHT, async ([encoded, partitionId]) => {
      const entries: { streamId: string; id: string; transactionId: string }[] = [];
      const [, state] = await Promise.all([
        readRange(backend, `${base}s:${encoded}`, {
          start: '+',
          end: '-',
          reverse: true,
          count: 0,
          scanToEnd: true,
          scan: filter.offset + filter.limit,
          budget,
          keep: ([streamId, list]) => {
            const { id, transactionId } = entryFields(list);
            entries.push({ streamId, id, transactionId });
            return false;
          },
        }),
        redis.hmget(`${base}c:${encoded}:${group}`, 'pos', 'exp', 'upto'),
      ]);
      if (entries.length === 0) return;
      const resolvedAhead = await redis.smismember(
        `${base}a:${encoded}:${group}`,
        ...entries.map(({ streamId }) => streamId),
      );
      const [pos = null, exp = null, upto = null] = state;
      const position = pos ?? start ?? '0-0';
      const leasedUpTo = exp !== null && Number(exp) > now ? upto : null;
      const partition = decodeURIComponent(encoded);
      entries.forEach(({ streamId, id, transactionId }, index) => {
        const status = dead.has(`${encoded}\n${streamId}`)
          ? 'dead_letter'
          : compareStreamIds(streamId, position) <= 0 || resolvedAhead[index] === 1
            ? 'completed'
            : leasedUpTo !== null && compareStreamIds(streamId, leasedUpTo) <= 0
              ? 'processing'
              : 'pending';
        const at = streamIdTime(streamId);
        rows.push({
          at,
          // Ties (one millisecond) break on the message id, as in process: stream ids of two
          // partitions do not order their messages.
          id,
          row: {
            id,
            transactionId,
            partitionId,
            queue,
            partition,
            status,
            createdAt: new Date(at).toISOString(),
          },
        });
      });
    });
    return newestFirstPage(rows, filter.offset, filter.limit);
  }

  async get(partitionId: string, transactionId: string): Promise<MessageView | undefined> {
    const { backend } = this;
    const resolved = await backend.registry.resolve(partitionId);
    if (!resolved) return undefined;
    const [queue, partition] = resolved;
    const base = backend.base(queue);
    const dedup = await backend.redis.hget(`${base}d:${encode(partition)}`, transactionId);
    if (!dedup) return undefined;
    const streamId = dedup.slice(0, dedup.indexOf(' '));
    const entries = await backend.read<[string, string[]][]>(`${base}s:${encode(partition)}`, 'xrange', [
      streamId,
      streamId,
    ]);
    const [entry] = entries;
    return entry ? messageView(queue, partition, partitionId, entry) : undefined;
  }

  async delete(partitionId: string, transactionId: string): Promise<boolean> {
    const { backend } = this;
    const resolved = await backend.registry.resolve(partitionId);
    if (!resolved) return false;
    const [queue, partition] = resolved;
    const base = backend.base(queue);
    // Read first as well: a resent script (its first reply lost) finds nothing and answers 0.
    const existed = await backend.redis.hexists(`${base}d:${encode(partition)}`, transactionId);
    const deleted = await backend.run<number>('delete-message', [base], [encode(partition), transactionId]);
    return deleted === 1 || existed === 1;
  }
}

import type { Redis } from 'ioredis';
import { streamIdTime } from './identifiers.js';
import { newestFirstPage, QUEUE_MODE, type QueueMessageState } from './storage.js';

/** Dead letters read to mark messages `dead_letter`: the newest ones of the queue's DLQ stream. */
export const STATUS_DEAD_LETTER_SCAN = 10_000;

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

function fieldsOf(list: string[]): Record<string, string> {
  const fields: Record<string, string> = {};
  for (let index = 0; index + 1 < list.length; index += 2) {
    fields[list[index] as string] = list[index + 1] as string;
  }
  return fields;
}

/**
 * Queen's status view of one queue on Redis (read-only, plain commands): for each partition its
 * newest `offset + limit` entries and the queue-mode consumer state (`c:`, `a:` keys, see
 * lua/includes/broker.lua), merged newest first. `base` is the queue's key prefix.
 */
export async function listQueueMessagesRedis(
  redis: Redis,
  base: string,
  queue: string,
  filter: { limit: number; offset: number },
): Promise<QueueMessageState[]> {
  const group = encodeURIComponent(QUEUE_MODE);
  const [parts, start, deadEntries] = await Promise.all([
    redis.hgetall(`${base}parts`),
    redis.hget(`${base}groups`, group),
    redis.xrevrange(`${base}dlq`, '+', '-', 'COUNT', STATUS_DEAD_LETTER_SCAN) as Promise<
      [string, string[]][]
    >,
  ]);
  const dead = new Set<string>();
  for (const [, list] of deadEntries) {
    const fields = fieldsOf(list);
    if (fields.g === group) dead.add(`${fields.p}\n${fields.sid}`);
  }
  const now = Date.now();
  const rows: { at: number; id: string; row: QueueMessageState }[] = [];
  await Promise.all(
    Object.entries(parts).map(async ([encoded, partitionId]) => {
      const [entries, state] = await Promise.all([
        redis.xrevrange(`${base}s:${encoded}`, '+', '-', 'COUNT', filter.offset + filter.limit) as Promise<
          [string, string[]][]
        >,
        redis.hmget(`${base}c:${encoded}:${group}`, 'pos', 'exp', 'upto'),
      ]);
      if (entries.length === 0) return;
      const resolvedAhead = await redis.smismember(
        `${base}a:${encoded}:${group}`,
        ...entries.map(([id]) => id),
      );
      const [pos = null, exp = null, upto = null] = state;
      const position = pos ?? start ?? '0-0';
      const leasedUpTo = exp !== null && Number(exp) > now ? upto : null;
      const partition = decodeURIComponent(encoded);
      entries.forEach(([streamId, list], index) => {
        const fields = fieldsOf(list);
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
          id: streamId,
          row: {
            id: fields.m ?? '',
            transactionId: fields.t ?? '',
            partitionId,
            queuePath: `${queue}/${partition}`,
            queue,
            partition,
            status,
            createdAt: new Date(at).toISOString(),
          },
        });
      });
    }),
  );
  return newestFirstPage(rows, filter.offset, filter.limit);
}

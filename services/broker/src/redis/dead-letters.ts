/*
 * Dead letters on Redis (the DeadLetterStore role): the `dlq` stream (written by dead_letter in
 * lua/includes/dead-letter.lua), listed with plain commands and requeued by lua/requeue-dlq-1.lua.
 */
import { newId, streamIdTime } from '../identifiers.js';
import type { DeadLetter, DeadLetterStore } from '../storage.js';
import { ReadBudget } from '../view-budget.js';
import { decode, type RedisBackend } from './context.js';
import { fieldsOf } from './message-record.js';
import { parseJson } from './messages.js';
import { readRange } from './read-range.js';

/** Dead letters moved per requeue script run. */
const REQUEUE_CHUNK = 1000;

export class RedisDeadLetters implements DeadLetterStore {
  constructor(private readonly backend: RedisBackend) {}

  async list(filter: {
    queue: string;
    group?: string;
    limit: number;
    offset: number;
    budget?: ReadBudget;
  }): Promise<{ messages: DeadLetter[]; total: number }> {
    const { backend } = this;
    const base = backend.base(filter.queue);
    const parts = await backend.redis.hgetall(`${base}parts`);
    const toLetter = (entry: [string, string[]]): DeadLetter => {
      const fields = fieldsOf(entry[1]);
      const partition = decode(fields.p ?? '');
      return {
        dlqId: entry[0],
        id: fields.m ?? '',
        transactionId: fields.t ?? '',
        traceId: fields.tr || null,
        queue: filter.queue,
        partition,
        partitionId: parts[fields.p ?? ''] ?? '',
        data: parseJson(fields.d ?? 'null'),
        producerSub: fields.s || null,
        createdAt: new Date(streamIdTime(fields.sid ?? '0-0')).toISOString(),
        consumerGroup: decode(fields.g ?? ''),
        errorMessage: fields.err ?? '',
        retryCount: Number(fields.rc ?? 0),
        failedAt: new Date(Number(fields.at ?? 0)).toISOString(),
      };
    };
    const key = `${base}dlq`;
    const budget = filter.budget ?? new ReadBudget();
    const { group } = filter;
    let matches = 0;
    const entries = await readRange(backend, key, {
      start: '-',
      end: '+',
      count: filter.limit,
      budget,
      // With a group, every letter is read, to count the group's.
      scanToEnd: group !== undefined,
      keep: ([, list]) => {
        if (group !== undefined && decode(fieldsOf(list).g ?? '') !== group) return false;
        matches += 1;
        return matches > filter.offset;
      },
    });
    const total = group === undefined ? await backend.redis.xlen(key) : matches;
    return { messages: entries.map(toLetter), total };
  }

  /** Pushes dead letters again under their transactionId (a fresh message id); returns how many. */
  async requeue(queue: string, dlqIds: string[]): Promise<number> {
    const { backend } = this;
    const base = backend.base(queue);
    let count = 0;
    // In chunks: each script run blocks Redis, so none moves more than REQUEUE_CHUNK letters.
    for (let start = 0; start < dlqIds.length; start += REQUEUE_CHUNK) {
      const args: string[] = [];
      for (const id of dlqIds.slice(start, start + REQUEUE_CHUNK)) args.push(id, newId());
      count += await backend.run<number>('requeue-dlq', [base], args);
    }
    if (count > 0) backend.notifications.notify([queue]);
    return count;
  }
}

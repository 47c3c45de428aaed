/*
 * The outbox on Redis (the OutboxStore role; docs/broker-outbox.md). Intents live in each queue's
 * slot, in the stream `<base>ob`, written by the data path's scripts (lua/includes/outbox.lua)
 * in the same run as the change that causes them; lua/outbox-take-1.lua and outbox-done-1.lua
 * hand them to one relay at a time and remove them once applied.
 *
 * Which outboxes to look at: the global sorted set `outbox:due` (queue -> when, ms). A node marks
 * a queue there after a request of its own recorded intents (and, for a transaction's hub
 * updates, before running it); the relay that empties the outbox takes the mark off
 * (outbox-forget-1.lua, unless marked again meanwhile). A node killed between a push to a
 * bridged queue and its mark leaves intents no mark names: the bridged queues (`outbox:bridged`,
 * written before the option itself) are looked at now and then for those.
 */
import { streamIdTime } from '../identifiers.js';
import type { OutboxIntent, OutboxStatus, OutboxStore, OutboxTake } from '../storage.js';
import { decode, type RedisBackend, type Reply } from './context.js';
import { RedisTransactions } from './transactions.js';

/** Field values of a stream entry, by name. */
function fieldsOf(raw: Reply[]): Map<string, string> {
  const fields = new Map<string, string>();
  for (let index = 0; index + 1 < raw.length; index += 2)
    fields.set(String(raw[index]), String(raw[index + 1]));
  return fields;
}

/** An outbox entry as outbox-take-1.lua returns it; undefined for a shape this node does not know. */
function intentOf(queue: string, entry: [string, Reply[]]): OutboxIntent | undefined {
  const [id, raw] = entry;
  const fields = fieldsOf(raw);
  const text = (name: string) => fields.get(name) ?? '';
  if (text('k') === 'bridge') {
    const event = text('e');
    return {
      kind: 'bridge',
      id,
      queue,
      event: event === 'completed' ? 'completed' : 'pushed',
      partition: decode(text('p')),
      messageId: text('m'),
      transactionId: text('x'),
      group: decode(text('g')),
      topicTemplate: text('t'),
      private: text('v') === '1',
      data: text('d'),
    };
  }
  if (text('k') === 'publish') {
    const type = text('y');
    return {
      kind: 'publish',
      id,
      queue,
      update: {
        id: text('i'),
        topics: JSON.parse(text('t') || '[]') as string[],
        data: text('d'),
        private: text('v') === '1',
        type: type === '' ? undefined : type,
      },
    };
  }
  if (text('k') === 'apply') {
    return {
      kind: 'apply',
      id,
      queue,
      transactionId: text('x'),
      shares: JSON.parse(text('q') || '[]') as string[][],
    };
  }
  return undefined;
}

export class RedisOutbox implements OutboxStore {
  private readonly listeners: ((queue: string) => void)[] = [];
  private readonly transactions: RedisTransactions;

  constructor(private readonly backend: RedisBackend) {
    this.transactions = new RedisTransactions(backend);
  }

  async applyTransaction(transactionId: string, shares: readonly string[][]): Promise<void> {
    await Promise.all(shares.map((queues) => this.transactions.applyShare(transactionId, queues)));
  }

  recoverTransactions(now: number): Promise<number> {
    return this.transactions.recover(now);
  }

  private get dueKey(): string {
    return this.backend.key('outbox', 'due');
  }

  /** The set of bridged queues. */
  get bridgedKey(): string {
    return this.backend.key('outbox', 'bridged');
  }

  async due(now: number, limit: number): Promise<{ queue: string; mark: number }[]> {
    const rows = await this.backend.redis.zrangebyscore(
      this.dueKey,
      '-inf',
      now,
      'WITHSCORES',
      'LIMIT',
      0,
      limit,
    );
    const due: { queue: string; mark: number }[] = [];
    for (let index = 0; index + 1 < rows.length; index += 2) {
      due.push({ queue: rows[index] as string, mark: Number(rows[index + 1]) });
    }
    return due;
  }

  async mark(queue: string, at: number): Promise<void> {
    // A fraction makes each mark a new score, so a relay's forget of an older one misses it.
    await this.backend.redis.zadd(this.dueKey, at + Math.random(), queue);
  }

  async forget(queue: string, mark: number): Promise<void> {
    await this.backend.run('outbox-forget', [this.dueKey], [queue, String(mark)]);
  }

  async take(queue: string, relay: string, lockMs: number, count: number): Promise<OutboxTake> {
    const reply = await this.backend.run<[number, number | [string, Reply[]][]]>(
      'outbox-take',
      [this.backend.base(queue)],
      [relay, lockMs, count],
    );
    if (reply[0] !== 1) return { held: false, retryInMs: Math.max(0, Number(reply[1])) };
    const intents: OutboxIntent[] = [];
    for (const entry of reply[1] as [string, Reply[]][]) {
      const intent = intentOf(queue, entry);
      // An intent of a kind a newer node wrote: left for that node's relays.
      if (intent) intents.push(intent);
    }
    return { held: true, intents };
  }

  async done(
    queue: string,
    relay: string,
    relayed: readonly string[],
    refused: readonly { id: string; reason: string }[],
  ): Promise<number> {
    const args = [
      relay,
      String(relayed.length),
      ...relayed,
      ...refused.flatMap(({ id, reason }) => [id, reason]),
    ];
    return Number(await this.backend.run('outbox-done', [this.backend.base(queue)], args));
  }

  bridged(): Promise<string[]> {
    return this.backend.redis.smembers(this.bridgedKey);
  }

  async status(queues: readonly string[]): Promise<OutboxStatus[]> {
    const { redis } = this.backend;
    return Promise.all(
      queues.map(async (queue) => {
        const base = this.backend.base(queue);
        const [pending, head, refused] = await Promise.all([
          redis.xlen(`${base}ob`),
          // The first intent whole (for its id): it may carry a large record.
          this.backend.read<[string, string[]][]>(`${base}ob`, 'xrange', ['-', '+', 'COUNT', 1]),
          redis.xlen(`${base}obd`),
        ]);
        const oldest = head[0]?.[0];
        return { queue, pending, oldestAt: oldest === undefined ? null : streamIdTime(oldest), refused };
      }),
    );
  }

  onRecorded(listener: (queue: string) => void): void {
    this.listeners.push(listener);
  }

  /** A request of this node recorded intents in the queue's outbox (queue-store.ts). */
  recorded(queue: string): void {
    for (const listener of this.listeners) listener(queue);
  }
}

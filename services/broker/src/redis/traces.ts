import type { Clock, RedisClient } from '@herald/redis';
import { newId } from '../identifiers.js';
import type { TraceEntry, TraceInput, TraceStore } from '../storage.js';

const TRACE_TTL_SECONDS = 7 * 24 * 3600;
/** Entries kept per message and per trace name (the oldest go first). */
const PER_MESSAGE = 100;
const PER_NAME = 1000;
/** Distinct trace names kept in the name index (the least used go first). */
const NAMES_KEPT = 10_000;

/**
 * Message traces in Redis (plain commands; keys spread over slots by message, name and id). An entry is stored once, under its
 * id; the per-message and per-name lists hold only the id, so a trace with N names costs its
 * body once plus N small references (docs/broker-api.md "Limits").
 */
export class RedisTraces implements TraceStore {
  constructor(
    private readonly redis: RedisClient,
    private readonly key: (...parts: string[]) => string,
    private readonly clock: Clock,
  ) {}

  async add(trace: TraceInput): Promise<TraceEntry> {
    const entry: TraceEntry = { ...trace, id: newId(), createdAt: new Date(this.clock.now()).toISOString() };
    // One MULTI per key, never one across keys: on Redis Cluster each key has its own slot
    // (docs/broker-topologies.md "Redis topologies"). A reader skips an id whose entry is not (yet) there.
    const appendTo = (key: string, kept: number) =>
      this.redis.multi().rpush(key, entry.id).ltrim(key, -kept, -1).expire(key, TRACE_TTL_SECONDS).exec();
    const writes: Promise<unknown>[] = [
      this.redis.set(this.key('trace-entry', entry.id), JSON.stringify(entry), 'EX', TRACE_TTL_SECONDS),
      appendTo(this.key('trace', trace.partitionId, trace.transactionId), PER_MESSAGE),
    ];
    for (const name of trace.traceNames) writes.push(appendTo(this.key('trace-name', name), PER_NAME));
    if (trace.traceNames.length > 0) {
      const namesKey = this.key('trace-names');
      const names = this.redis.multi();
      for (const name of trace.traceNames) names.zincrby(namesKey, 1, name);
      // Distinct names are client-chosen: the index keeps the most used only.
      writes.push(names.zremrangebyrank(namesKey, 0, -(NAMES_KEPT + 1)).exec());
    }
    await Promise.all(writes);
    return entry;
  }

  async ofMessage(partitionId: string, transactionId: string): Promise<TraceEntry[]> {
    return this.entries(await this.redis.lrange(this.key('trace', partitionId, transactionId), 0, -1));
  }

  async byName(name: string, limit: number): Promise<TraceEntry[]> {
    return this.entries(await this.redis.lrange(this.key('trace-name', name), -limit, -1));
  }

  async names(limit: number): Promise<{ name: string; count: number }[]> {
    const flat = await this.redis.zrevrange(this.key('trace-names'), 0, limit - 1, 'WITHSCORES');
    const out: { name: string; count: number }[] = [];
    for (let index = 0; index + 1 < flat.length; index += 2) {
      out.push({ name: flat[index] as string, count: Number(flat[index + 1]) });
    }
    return out;
  }

  /** Entries of a list of ids (older releases stored the entry text itself in the list). */
  private async entries(list: string[]): Promise<TraceEntry[]> {
    const ids = list.filter((item) => !item.startsWith('{'));
    // One GET per entry, not MGET: on Redis Cluster the entries live in different slots.
    const texts = await Promise.all(ids.map((id) => this.redis.get(this.key('trace-entry', id))));
    const byId = new Map(ids.map((id, index) => [id, texts[index]]));
    const entries: TraceEntry[] = [];
    for (const item of list) {
      const text = item.startsWith('{') ? item : byId.get(item);
      if (text) entries.push(JSON.parse(text) as TraceEntry);
    }
    return entries;
  }
}

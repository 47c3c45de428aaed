import type { Clock } from '@herald/redis';
import { newId } from '../identifiers.js';
import type { TraceEntry, TraceInput } from '../storage.js';

/** Entries kept per message and per trace name (the oldest go first), as redis/traces.ts. */
const PER_MESSAGE = 100;
const PER_NAME = 1000;
/** Distinct keys kept per trace index (oldest first out): the memory backend has no TTL. */
const TRACE_KEYS_KEPT = 10_000;

function appendCapped<T>(map: Map<string, T[]>, key: string, value: T, perKey: number): void {
  const list = map.get(key);
  if (list) {
    list.push(value);
    if (list.length > perKey) list.shift();
    return;
  }
  if (map.size >= TRACE_KEYS_KEPT) map.delete(map.keys().next().value as string);
  map.set(key, [value]);
}

/** Message traces in process. Lists share the one entry object; with no TTL here, key counts are capped instead. */
export class MemoryTraces {
  private readonly byMessage = new Map<string, TraceEntry[]>();
  private readonly byName = new Map<string, TraceEntry[]>();

  constructor(private readonly clock: Clock) {}

  add(trace: TraceInput): TraceEntry {
    const entry: TraceEntry = { ...trace, id: newId(), createdAt: new Date(this.clock.now()).toISOString() };
    appendCapped(this.byMessage, `${trace.partitionId}\n${trace.transactionId}`, entry, PER_MESSAGE);
    for (const name of trace.traceNames) appendCapped(this.byName, name, entry, PER_NAME);
    return entry;
  }

  ofMessage(partitionId: string, transactionId: string): TraceEntry[] {
    return this.byMessage.get(`${partitionId}\n${transactionId}`) ?? [];
  }

  named(name: string, limit: number): TraceEntry[] {
    return (this.byName.get(name) ?? []).slice(-limit);
  }

  names(limit: number): { name: string; count: number }[] {
    return [...this.byName]
      .map(([name, list]) => ({ name, count: list.length }))
      .sort((a, b) => b.count - a.count)
      .slice(0, limit);
  }
}

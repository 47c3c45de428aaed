/*
 * Runs one operation sequence against the broker's storage on a fresh embedded engine and on
 * a real Redis in lockstep on one fake clock, compares every answer and every observation
 * after it, and shrinks a failing sequence to a short one that still fails. Both run the same
 * code and the same scripts: a difference is the engine not behaving as Redis does.
 */
import { isDeepStrictEqual } from 'node:util';
import { type BrokerStorage, RedisStorage, startEmbeddedStorage } from '@herald/broker';
import type { KeyClock, RedisTopology, ScriptSet } from '@herald/redis';
import { uniquePrefix } from '@herald/testkit';
import { type Operation, Runner } from './differential-model.js';

/** Far enough ahead that the scripts' absolute key expiries (PEXPIREAT) never fall in the past. */
export const CLOCK_START = Date.UTC(2100, 0, 1);

export interface Mismatch {
  index: number;
  operation: Operation;
  what: 'answer' | 'state after';
  embedded: unknown;
  redis: unknown;
}

export interface PairContext {
  topology: RedisTopology;
  scripts: ScriptSet;
  /**
   * Both storages' clock; the Redis storage's scripts (`scripts`, loaded on the key clock) read
   * it from a key per queue base, which it writes as it moves.
   */
  clock: KeyClock;
  /** Queue 0 and 1 of the operations (QUEUES, or two of one namespace on Redis Cluster). */
  queues: readonly string[];
  /** BROKER_REDIS_SLOT_GROUP of the Redis storage. */
  slotGroup: 'queue' | 'namespace';
}

/** A queue's key base as RedisStorage builds it (storage-redis.ts `base`): its clock key's prefix. */
function queueBase(prefix: string, queue: string, slotGroup: PairContext['slotGroup']): string {
  if (slotGroup === 'namespace') {
    return `${prefix}{${encodeURIComponent(queue.split('.')[0] ?? '')}}:${encodeURIComponent(queue)}:`;
  }
  return `${prefix}{${encodeURIComponent(queue)}}:`;
}

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

/**
 * Names the two runs legitimately choose differently, replaced by the order in which they
 * first appear: ids the storage generates (a requeued message's new id, random on each side)
 * and dead-letter ids (stream ids on both sides, mapped too so a difference in them shows in
 * the entries' content rather than as noise).
 */
class Canonical {
  private readonly names = new Map<string, Map<string, string>>();

  private name(kind: string, value: string): string {
    let names = this.names.get(kind);
    if (!names) {
      names = new Map();
      this.names.set(kind, names);
    }
    let name = names.get(value);
    if (name === undefined) {
      name = `<${kind} ${names.size}>`;
      names.set(value, name);
    }
    return name;
  }

  apply(value: unknown): unknown {
    if (typeof value === 'string') return UUID.test(value) ? this.name('id', value) : value;
    if (Array.isArray(value)) return value.map((entry) => this.apply(entry));
    if (value !== null && typeof value === 'object') {
      // Dead-letter ids are per queue (Redis: an id of the queue's dlq stream).
      const queue = (value as { queue?: unknown }).queue;
      return Object.fromEntries(
        Object.entries(value).map(([key, entry]) => [
          key,
          key === 'dlqId' && typeof entry === 'string'
            ? this.name('dlq', `${queue}\n${entry}`)
            : this.apply(entry),
        ]),
      );
    }
    return value;
  }
}

/** DIFF_TRACE=1: every operation and both answers on stderr (to read a replayed sequence). */
const TRACE = process.env.DIFF_TRACE === '1';

function trace(index: number, operation: Operation, embedded: unknown, redis: unknown): void {
  const same = isDeepStrictEqual(embedded, redis);
  process.stderr.write(`#${index} ${JSON.stringify(operation)}\n  embedded: ${JSON.stringify(embedded)}\n`);
  process.stderr.write(same ? '  redis:  (same)\n' : `  redis:  ${JSON.stringify(redis)}\n`);
}

async function closeAll(storages: BrokerStorage[]): Promise<void> {
  await Promise.all(storages.map((storage) => storage.close()));
}

/** The first difference between the backends over `operations`, or undefined. */
export async function runPair(
  operations: readonly Operation[],
  context: PairContext,
): Promise<Mismatch | undefined> {
  const prefix = uniquePrefix('diff');
  context.clock.untrackAll();
  await context.clock.set(CLOCK_START);
  await context.clock.track([
    ...context.queues.map((queue) => queueBase(prefix, queue, context.slotGroup)),
    // The streams registry's scripts (streams-register) take its base as their first key
    // (storage-redis.ts: `{streams}:` where slots are enforced).
    `${prefix}${context.slotGroup === 'namespace' ? '{streams}:' : 'streams:'}`,
  ]);
  const log = { warn: () => undefined, info: () => undefined };
  // The embedded default: the same storage code and scripts on the in-process engine, whose
  // TIME is the KeyClock's own time (no key to write: the engine reads the clock).
  const embedded = await startEmbeddedStorage({ prefix, clock: context.clock, log });
  const redis = new RedisStorage({
    topology: context.topology,
    clock: context.clock,
    prefix,
    slotGroup: context.slotGroup,
    scripts: context.scripts,
    log,
  });
  try {
    const embeddedRunner = new Runner(embedded, context.clock, context.queues);
    // A query's cycle scripts take its own base as their first key (streams/redis.ts `locate`).
    const oneSlot = context.topology.kind === 'cluster';
    const trackQuery = (queryId: string) =>
      context.clock.track([
        oneSlot
          ? `${queueBase(prefix, context.queues[0] as string, context.slotGroup)}~streams:${queryId}:`
          : `${prefix}streams:{${queryId}}:`,
      ]);
    const redisRunner = new Runner(redis, context.clock, context.queues, trackQuery);
    const embeddedNames = new Canonical();
    const redisNames = new Canonical();
    for (const [index, operation] of operations.entries()) {
      if (operation.op === 'advance') await context.clock.advance(operation.ms);
      const embeddedAnswer = embeddedNames.apply(await embeddedRunner.apply(operation));
      const redisAnswer = redisNames.apply(await redisRunner.apply(operation));
      if (TRACE) trace(index, operation, embeddedAnswer, redisAnswer);
      if (!isDeepStrictEqual(embeddedAnswer, redisAnswer)) {
        return { index, operation, what: 'answer', embedded: embeddedAnswer, redis: redisAnswer };
      }
      const embeddedState = embeddedNames.apply(await embeddedRunner.observe());
      const redisState = redisNames.apply(await redisRunner.observe());
      if (!isDeepStrictEqual(embeddedState, redisState)) {
        return { index, operation, what: 'state after', embedded: embeddedState, redis: redisState };
      }
    }
    return undefined;
  } finally {
    await closeAll([embedded, redis]);
  }
}

/**
 * A shorter sequence that still fails (any difference): cut after the failing operation, then
 * remove chunks of operations, halving the chunk size down to one (delta debugging), within a
 * budget of replays.
 */
export async function shrink(
  operations: readonly Operation[],
  first: Mismatch,
  context: PairContext,
  maxReplays = 400,
): Promise<{ operations: Operation[]; mismatch: Mismatch; replays: number }> {
  let current = operations.slice(0, first.index + 1);
  let mismatch = first;
  let replays = 0;
  for (let chunk = Math.max(1, current.length >> 1); chunk >= 1 && replays < maxReplays; ) {
    let removed = false;
    for (let start = 0; start < current.length && replays < maxReplays; start += chunk) {
      const candidate = [...current.slice(0, start), ...current.slice(start + chunk)];
      if (candidate.length === 0) continue;
      replays++;
      const found = await runPair(candidate, context);
      if (found) {
        current = candidate.slice(0, found.index + 1);
        mismatch = found;
        removed = true;
        start -= chunk;
      }
    }
    if (!removed) chunk >>= 1;
  }
  return { operations: current, mismatch, replays };
}

/** Where two answers first differ, as `path: embedded … / redis …` lines. */
function firstDifference(embedded: unknown, redis: unknown, path: string): string[] {
  if (isDeepStrictEqual(embedded, redis)) return [];
  const bothObjects =
    embedded !== null && redis !== null && typeof embedded === 'object' && typeof redis === 'object';
  if (bothObjects && Array.isArray(embedded) === Array.isArray(redis)) {
    const left = embedded as Record<string, unknown>;
    const right = redis as Record<string, unknown>;
    const keys = Array.isArray(embedded)
      ? [...Array(Math.max(embedded.length, (redis as unknown[]).length)).keys()].map(String)
      : [...new Set([...Object.keys(left), ...Object.keys(right)])];
    for (const key of keys) {
      const found = firstDifference(left[key], right[key], `${path}.${key}`);
      if (found.length > 0) return found;
    }
  }
  return [`${path}`, `  embedded: ${JSON.stringify(embedded)}`, `  redis:  ${JSON.stringify(redis)}`];
}

/** What a failing seed prints: the difference, and the sequence to replay it. */
export function describe(
  seed: number | 'replay',
  shrunk: { operations: Operation[]; mismatch: Mismatch },
): string {
  const { mismatch, operations } = shrunk;
  return [
    `the backends differ (seed ${seed}), at operation ${mismatch.index} of the shrunk sequence (${mismatch.what}):`,
    JSON.stringify(mismatch.operation),
    ...firstDifference(mismatch.embedded, mismatch.redis, '$'),
    'replay with DIFF_REPLAY set to this sequence:',
    JSON.stringify(operations),
  ].join('\n');
}

/*
 * Over 500 lines on purpose: the generator, the lockstep runner and the shrinker of one
 * model-based test read together; the rules they share are in this file only.
 *
 * The two hub transports agree (issue #11, item 1): seeded random operation sequences run, in
 * lockstep, against MemoryTransport and RedisTransport at the Transport interface, and every
 * observable result is compared: publish results (which entry, repeat or not), findPosition,
 * readHistory (from the oldest or from an entry, up to an entry or the end, with a limit),
 * lastEventId, historyLength, and, at the end, what each one handed its listener, in order.
 *
 * Positions are opaque and differ between backends, so each is translated to the ordinal of the
 * publish that appended its entry before comparing.
 *
 * The size bound is compared exactly: this file's private redis-server runs with
 * `stream-node-max-entries 1`, so `XADD MAXLEN ~` trims whole nodes of one entry, i.e. exactly
 * (with the default, Redis keeps up to ~100 entries more, as docs/hub.md says).
 *
 * The age bound: the memory transport's clock is the test's; Redis's clock cannot be driven, so an
 * `expire` step waits (an awaited condition on Redis TIME) until the age bound has passed for the
 * newest entry, then moves the memory clock past it too. Between `expire` steps no entry reaches
 * the bound on either side (HISTORY_TTL is far above the few milliseconds a seed's steps take).
 *
 * With topic partitions (MERCURE_PARTITIONS=8, issue #12; docs/hub.md, topic partitions) the
 * Redis transport keeps a history per partition and writes one copy of an update per partition of
 * its topics, while the in-process one keeps one history. The partitioned seeds compare everything
 * that must still agree, and say what differs by design:
 * - same: publish results (the entry, repeat or not), lastEventId, reads from the oldest or after
 *   an entry up to an entry or the end (Redis's copies reduced to the one a match-all subscriber
 *   takes, the lowest partition's), what the listener receives (reduced the same way), expiry;
 * - differs, so compared differently: `historyLength` counts copies on Redis (compared with the
 *   copies the model's history implies); `findPosition` answers a resume cursor RESUME_WINDOW before
 *   the earliest copy, not an entry (compared: found or not); a read's `limit` counts copies on
 *   Redis (reads are compared unlimited); the size bound is per partition on Redis (partitioned
 *   seeds stay under it); an id reused with topics in other partitions appends the copies missing
 *   there (partitioned seeds give each id one topic set, as a retry does);
 * - Redis orders partitions by (ms, partition, seq): each partitioned publish starts in a later
 *   Redis millisecond than the previous one ended, so that order is the publish order.
 *
 * Replay a failure: HUB_DIFF_SEED=<seed> (one seed, same sequence; a seed above
 * PARTITIONED_SEED_OFFSET is a partitioned one), or HUB_DIFF_REPLAY='<json>' with the sequence the
 * failure printed.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { createMetrics } from '@herald/metrics';
import { RedisServer, seededRandom, uniquePrefix, waitFor } from '@herald/testkit';
import { Redis } from 'ioredis';
import { partitionsOfTopics, takesCopy } from '../src/partitions.js';
import type { Transport } from '../src/transport.js';
import { MemoryTransport } from '../src/transport-memory.js';
import { RedisTransport } from '../src/transport-redis.js';
import type { Cursor, Position, StoredUpdate, Update } from '../src/update.js';

const SEED_COUNT = 40;
const OPERATIONS_PER_SEED = 80;
/** Seeds with an age bound are shorter: their steps between expiries must stay within the bound. */
const OPERATIONS_PER_AGED_SEED = 24;
/**
 * The age bound of the generated runs that have one: far above what their steps take between expiries, even
 * on a loaded machine (checked at every step: see `checkNothingAged`).
 */
const HISTORY_TTL = 2500;
/** An aged seed expires at least this often (its steps between expiries must stay within the bound). */
const MAX_STEPS_BETWEEN_EXPIRIES = 8;
/** Past any position either backend hands out. */
const END: Position = `${Number.MAX_SAFE_INTEGER}-0`;
/** Partitioned seeds: their count, their partitions, and where their seed numbers start. */
const PARTITIONED_SEED_COUNT = 12;
const PARTITIONS = 8;
const PARTITIONED_SEED_OFFSET = 1000;
/** Above any partitioned sequence's publishes: no size trim (the bound is per partition on Redis). */
const PARTITIONED_HISTORY_SIZE = 1000;
/** A read of everything (partitioned reads are compared unlimited: a Redis page counts copies). */
const UNLIMITED = 1_000_000;
/** The largest sequence of a stream id. */
const MAX_SEQUENCE = '18446744073709551615';

interface Settings {
  readonly historySize: number;
  /** 0: no age bound. */
  readonly historyTtl: number;
}

/** `after`/`upTo` name earlier publishes by ordinal (0 = the sequence's first publish). */
type Operation =
  | { readonly kind: 'publish'; readonly update: Update }
  | { readonly kind: 'find'; readonly id: string }
  | {
      readonly kind: 'read';
      readonly after: number | 'oldest';
      readonly upTo: number | 'end';
      readonly limit: number;
    }
  | { readonly kind: 'lastEventId' }
  | { readonly kind: 'historyLength' }
  | { readonly kind: 'expire' };

interface Sequence {
  readonly seed: number;
  readonly settings: Settings;
  /** Topic partitions of the Redis transport (absent: 1). */
  readonly partitions?: number;
  readonly operations: readonly Operation[];
}

const TOPICS = ['https://example.com/a', 'https://example.com/b/1', 'urn:topic:ü', '/relative?q=1#x'];
const DATA = ['', 'plain', 'two\nlines', 'ünïcödé ✓', '{"json":[1,2]}', ' spaced ', 'a'.repeat(300)];

function generate(seed: number): Sequence {
  const partitions = seed > PARTITIONED_SEED_OFFSET ? PARTITIONS : 1;
  const random = seededRandom(seed);
  const pick = <T>(values: readonly T[]): T => values[Math.floor(random() * values.length)] as T;
  const drawnSize = 1 + Math.floor(random() * 8);
  const historySize = partitions > 1 ? PARTITIONED_HISTORY_SIZE : drawnSize;
  // A third of the generated runs bound the age too; the others have no age bound.
  const historyTtl = seed % 3 === 0 ? HISTORY_TTL : 0;
  // Few ids, so repeats (entry still in history) and reuse after a trim both happen often.
  const ids = Array.from({ length: drawnSize + 3 }, (_, index) => `urn:diff:${seed}:${index}`);
  // Partitioned: each id keeps one topic set, 1 to 3 topics (often in several partitions).
  const topicsOfId = new Map(
    ids.map((id) => [
      id,
      [...new Set(Array.from({ length: 1 + Math.floor(random() * 3) }, () => pick(TOPICS)))],
    ]),
  );
  const operations: Operation[] = [];
  let publishes = 0;
  let publishedSinceExpiry = false;
  const length = historyTtl > 0 ? OPERATIONS_PER_AGED_SEED : OPERATIONS_PER_SEED;
  /** Steps since the last expire step: kept few, so none can take the bound's time on a loaded machine. */
  let sinceExpiry = 0;
  while (operations.length < length) {
    if (historyTtl > 0 && publishedSinceExpiry && sinceExpiry >= MAX_STEPS_BETWEEN_EXPIRIES) {
      operations.push({ kind: 'expire' });
      publishedSinceExpiry = false;
      sinceExpiry = 0;
      continue;
    }
    sinceExpiry += 1;
    const roll = random();
    if (roll < 0.45) {
      const id = pick(ids);
      const drawnTopics = [pick(TOPICS), ...(random() < 0.3 ? [pick(TOPICS)] : [])];
      const topics = partitions > 1 ? (topicsOfId.get(id) as string[]) : drawnTopics;
      const type = random() < 0.2 ? pick(['note', 'événement']) : undefined;
      const retry = random() < 0.2 ? Math.floor(random() * 10_000) : undefined;
      const update: Update = {
        id,
        topics,
        data: pick(DATA),
        private: random() < 0.3,
        ...(type !== undefined ? { type } : {}),
        ...(retry !== undefined ? { retry } : {}),
      };
      operations.push({ kind: 'publish', update });
      publishes += 1;
      publishedSinceExpiry = true;
    } else if (roll < 0.57) {
      operations.push({ kind: 'find', id: random() < 0.9 ? pick(ids) : `urn:diff:${seed}:never` });
    } else if (roll < 0.79) {
      const earlier = () => Math.floor(random() * publishes);
      operations.push({
        kind: 'read',
        after: publishes > 0 && random() < 0.6 ? earlier() : 'oldest',
        upTo: publishes > 0 && random() < 0.4 ? earlier() : 'end',
        limit: partitions > 1 ? UNLIMITED : 1 + Math.floor(random() * (historySize + 2)),
      });
    } else if (roll < 0.88) {
      operations.push({ kind: 'lastEventId' });
    } else if (roll < 0.94) {
      operations.push({ kind: 'historyLength' });
    } else if (historyTtl > 0 && publishedSinceExpiry) {
      operations.push({ kind: 'expire' });
      publishedSinceExpiry = false;
      sinceExpiry = 0;
    }
  }
  return {
    seed,
    settings: { historySize, historyTtl },
    ...(partitions > 1 ? { partitions } : {}),
    operations,
  };
}

/** One backend under test, with positions translated to publish ordinals. */
interface Subject {
  readonly transport: Transport;
  /** Partitions of the Redis transport compared (1: the plain comparison). */
  readonly partitions: number;
  /** Ordinal of the publish that appended the entry at each position. */
  readonly ordinalOf: Map<Position, number>;
  /** Position each publish resolved to (an appended entry or, for a repeat, the existing one). */
  readonly positionOf: Position[];
  readonly delivered: StoredUpdate[];
  /** Hears each appended entry's position. */
  onAppended(position: Position): void;
  /** Moves the age bound past every entry in history. */
  expire(): Promise<void>;
  /** Partitioned Redis: waits until Redis time is past every copy the previous publish wrote. */
  beforePublish(): Promise<void>;
  /** Partitioned Redis: notes the Redis time once a publish's copies are all written. */
  afterPublish(): Promise<void>;
  /** The cursor covering every entry up to the one appended by publish `ordinal`. */
  cursorAt(ordinal: number): Cursor;
  /** The cursor past every entry. */
  readonly end: Cursor;
  /**
   * Throws when an entry appended since the last `expire` may have reached the age bound: the
   * backends' clocks then differ (the memory clock only moves at `expire`), and a comparison would
   * say nothing about the transports.
   */
  checkNothingAged(): Promise<void>;
  close(): Promise<void>;
}

let redisServer: RedisServer;
let admin: Redis;

async function redisTimeMs(): Promise<number> {
  const [seconds, microseconds] = await admin.time();
  return Number(seconds) * 1000 + Math.floor(Number(microseconds) / 1000);
}

function positionMs(position: Position): number {
  return Number(position.slice(0, position.indexOf('-')));
}

async function memorySubject(settings: Settings, partitions: number): Promise<Subject> {
  let now = Date.now();
  const transport = new MemoryTransport({ ...settings, clock: () => now });
  const delivered: StoredUpdate[] = [];
  await transport.start((update) => delivered.push(update));
  const positionOf: Position[] = [];
  return {
    transport,
    partitions,
    ordinalOf: new Map(),
    positionOf,
    delivered,
    onAppended() {},
    async expire() {
      now += settings.historyTtl + 1;
    },
    async beforePublish() {},
    async afterPublish() {},
    cursorAt: (ordinal) => [positionOf[ordinal] as Position],
    end: [END],
    async checkNothingAged() {},
    close: () => transport.stop(),
  };
}

async function redisSubject(settings: Settings, partitions: number): Promise<Subject> {
  const metrics = createMetrics({ defaultLabels: { service: 'hub' } });
  const transport = new RedisTransport({
    url: redisServer.url,
    prefix: uniquePrefix('hub-diff'),
    ...settings,
    partitions,
    metrics,
    subscriptions: false,
    subscriptionsLease: 30_000,
  });
  const delivered: StoredUpdate[] = [];
  await transport.start((update) => delivered.push(update));
  // Every partition's copies reach the listener (a node with a pattern subscriber).
  transport.watch(undefined);
  const positionOf: Position[] = [];
  const ordinalOf = new Map<Position, number>();
  /** Redis time (ms) of the first entry appended since the last expire step. */
  let firstSinceExpiry: number | undefined;
  /** Per publish ordinal: Redis time (ms) once its copies were all written (partitioned). */
  const writtenBy: number[] = [];
  const cursorOfMs = (ms: number): Cursor =>
    Array.from({ length: partitions }, () => `${ms}-${MAX_SEQUENCE}`);
  return {
    transport,
    partitions,
    async beforePublish() {
      const previous = writtenBy.at(-1);
      if (partitions === 1 || previous === undefined) return;
      await waitFor(async () => (await redisTimeMs()) > previous, {
        intervalMs: 1,
        what: 'Redis time past the previous publish',
      });
    },
    async afterPublish() {
      if (partitions > 1) writtenBy.push(await redisTimeMs());
    },
    cursorAt(ordinal) {
      if (partitions === 1) return [positionOf[ordinal] as Position];
      // The entry publish `ordinal` resolved to (its own or, for a repeat, an earlier one's), and
      // every copy that publish wrote: all before the next publish's millisecond.
      const appendedBy = ordinalOf.get(positionOf[ordinal] as Position) as number;
      return cursorOfMs(writtenBy[appendedBy] as number);
    },
    end: Array.from({ length: partitions }, () => END),
    ordinalOf,
    onAppended(position) {
      firstSinceExpiry ??= positionMs(position);
    },
    positionOf,
    delivered,
    async expire() {
      // The history keys expire the age bound after the last append (publish-4.lua's PEXPIRE),
      // and Redis stamps that append's position from the same clock.
      // Partitioned: the other copies of a publish may carry a later millisecond (writtenBy bounds them).
      const newest = Math.max(...positionOf.map(positionMs), ...writtenBy);
      await waitFor(async () => (await redisTimeMs()) > newest + settings.historyTtl + 1, {
        intervalMs: 20,
        what: 'Redis time past the age bound',
      });
      firstSinceExpiry = undefined;
    },
    async checkNothingAged() {
      if (settings.historyTtl === 0 || firstSinceExpiry === undefined) return;
      const age = (await redisTimeMs()) - firstSinceExpiry;
      if (age >= settings.historyTtl) {
        throw new Error(
          `inconclusive: an entry appended since the last expire step is ${age} ms old, past the ${settings.historyTtl} ms bound, before its expire step (the machine ran this seed too slowly)`,
        );
      }
    },
    close: () => transport.stop(),
  };
}

/** Runs one step and describes what it observed, in backend-independent terms. */
async function observe(subject: Subject, operation: Operation): Promise<unknown> {
  const { transport, ordinalOf, positionOf, partitions } = subject;
  const ordinal = (position: Position | undefined) =>
    position === undefined ? undefined : (ordinalOf.get(position) ?? `unknown position ${position}`);
  const entry = (update: StoredUpdate) => ({
    entry: ordinal(update.position),
    ...comparable(update, partitions),
  });
  switch (operation.kind) {
    case 'publish': {
      await subject.beforePublish();
      const published = await transport.publish(operation.update);
      await subject.afterPublish();
      if (!published.repeat) {
        ordinalOf.set(published.position, positionOf.length);
        subject.onAppended(published.position);
      }
      positionOf.push(published.position);
      return { entry: ordinal(published.position), repeat: published.repeat };
    }
    case 'find': {
      const found = await transport.findPosition(operation.id);
      // Partitioned Redis answers a resume cursor, not an entry: compared, found or not.
      if (partitions > 1) return { found: found !== undefined };
      return { entry: ordinal(found?.[0]) };
    }
    case 'read': {
      const from = operation.after === 'oldest' ? undefined : subject.cursorAt(operation.after);
      const upTo = operation.upTo === 'end' ? subject.end : subject.cursorAt(operation.upTo);
      return onePerUpdate(await transport.readHistory(from, upTo, operation.limit)).map(entry);
    }
    case 'lastEventId':
      return { lastEventId: await transport.lastEventId() };
    case 'historyLength': {
      if (partitions === 1 || transport.kind === 'redis')
        return { historyLength: await transport.historyLength() };
      // The model's history as copies: one per partition of each update's topics.
      const entries = await transport.readHistory(undefined, [END], UNLIMITED);
      const copies = entries.reduce(
        (sum, stored) => sum + partitionsOfTopics(stored.topics, partitions).length,
        0,
      );
      return { historyLength: copies };
    }
    case 'expire':
      await subject.expire();
      return 'expired';
  }
}

/**
 * What is compared of a stored update: all but its position; with partitions, also without where
 * it is stored (its partition, its topics' partitions), which the model does not have.
 */
function comparable(stored: StoredUpdate, partitions: number) {
  const { position: _position, ...update } = stored;
  if (partitions === 1) return update;
  const { partition: _partition, topicPartitions: _topicPartitions, ...unplaced } = update;
  return unplaced;
}

/** The copies a match-all subscriber takes: one per update, the lowest partition's (partitions.ts). */
function onePerUpdate(copies: readonly StoredUpdate[]): StoredUpdate[] {
  return copies.filter((copy) => takesCopy(copy, () => true));
}

/** Where and how the backends first disagreed. */
interface Disagreement {
  readonly step: number;
  readonly message: string;
}

/** Runs a sequence on fresh transports of both kinds; the first disagreement, if any. */
async function compare(sequence: Sequence): Promise<Disagreement | undefined> {
  const partitions = sequence.partitions ?? 1;
  const memory = await memorySubject(sequence.settings, partitions);
  const redis = await redisSubject(sequence.settings, partitions);
  try {
    for (const [step, operation] of sequence.operations.entries()) {
      const [inMemory, inRedis] = [await observe(memory, operation), await observe(redis, operation)];
      await redis.checkNothingAged();
      try {
        assert.deepEqual(inMemory, inRedis);
      } catch (error) {
        return { step, message: `${JSON.stringify(operation)}: ${(error as Error).message}` };
      }
    }
    // Fan-out: every appended entry, once, in history order, on both.
    await waitFor(() => onePerUpdate(redis.delivered).length >= memory.delivered.length, {
      what: 'the Redis listener to receive every appended entry',
    });
    const delivered = (subject: Subject) =>
      onePerUpdate(subject.delivered).map((update) => ({
        entry: subject.ordinalOf.get(update.position),
        ...comparable(update, partitions),
      }));
    try {
      assert.deepEqual(delivered(memory), delivered(redis));
    } catch (error) {
      return {
        step: sequence.operations.length,
        message: `listener deliveries: ${(error as Error).message}`,
      };
    }
    return undefined;
  } finally {
    await memory.close();
    await redis.close();
  }
}

/** The sequence without step `index`; reads naming a removed publish name the oldest/end instead. */
function without(sequence: Sequence, index: number): Sequence {
  const removed = sequence.operations[index] as Operation;
  const removedOrdinal =
    removed.kind === 'publish'
      ? sequence.operations.slice(0, index).filter((operation) => operation.kind === 'publish').length
      : undefined;
  const renumber = <T extends string>(ordinal: number | T, instead: T): number | T => {
    if (removedOrdinal === undefined || typeof ordinal !== 'number' || ordinal < removedOrdinal)
      return ordinal;
    return ordinal === removedOrdinal ? instead : ordinal - 1;
  };
  const operations = sequence.operations
    .filter((_, position) => position !== index)
    .map((operation) =>
      operation.kind === 'read'
        ? { ...operation, after: renumber(operation.after, 'oldest'), upTo: renumber(operation.upTo, 'end') }
        : operation,
    );
  return { ...sequence, operations };
}

/** The sequence without the steps at `indexes`. */
function withoutAll(sequence: Sequence, indexes: readonly number[]): Sequence {
  return [...indexes].sort((x, y) => y - x).reduce(without, sequence);
}

/** Bounds the time spent shrinking one failure (each try runs both backends afresh). */
const SHRINK_BUDGET_MS = 20_000;

/**
 * A short sequence that still makes the backends disagree: the steps up to the first disagreement,
 * then runs of steps dropped while the disagreement remains, halving the run length down to single
 * steps (delta debugging, greedy, within SHRINK_BUDGET_MS).
 */
async function shrink(sequence: Sequence, first: Disagreement): Promise<[Sequence, Disagreement]> {
  let smallest: Sequence = { ...sequence, operations: sequence.operations.slice(0, first.step + 1) };
  let disagreement = first;
  const deadline = Date.now() + SHRINK_BUDGET_MS;
  for (
    let run = Math.ceil(smallest.operations.length / 2);
    run >= 1;
    run = run === 1 ? 0 : Math.ceil(run / 2)
  ) {
    // The last step is where they disagree: keep it, drop runs before it.
    for (let end = smallest.operations.length - 1; end > 0 && Date.now() < deadline; end -= run) {
      const start = Math.max(0, end - run);
      const candidate = withoutAll(
        smallest,
        Array.from({ length: end - start }, (_, offset) => start + offset),
      );
      const found = await compare(candidate);
      if (found) {
        smallest = { ...candidate, operations: candidate.operations.slice(0, found.step + 1) };
        disagreement = found;
        end = Math.min(end, smallest.operations.length - 1 + run);
      }
    }
  }
  return [smallest, disagreement];
}

async function runSequence(sequence: Sequence): Promise<void> {
  const first = await compare(sequence);
  if (!first) return;
  const [smallest, disagreement] = await shrink(sequence, first);
  const { seed, settings } = sequence;
  assert.fail(
    [
      `seed ${seed} (historySize ${settings.historySize}, historyTtl ${settings.historyTtl}): the backends disagree at step ${first.step}`,
      first.message,
      `replay the seed: HUB_DIFF_SEED=${seed} node --import tsx --test services/hub/test/transport-differential.test.ts`,
      `a ${smallest.operations.length}-step sequence that disagrees at its last step (${disagreement.message.split('\n')[0]}):`,
      `HUB_DIFF_REPLAY='${JSON.stringify(smallest)}' node --import tsx --test services/hub/test/transport-differential.test.ts`,
    ].join('\n'),
  );
}

function sequences(): Sequence[] {
  const replay = process.env.HUB_DIFF_REPLAY;
  if (replay) return [JSON.parse(replay) as Sequence];
  const seed = process.env.HUB_DIFF_SEED;
  if (seed) return [generate(Number(seed))];
  return [
    ...Array.from({ length: SEED_COUNT }, (_, index) => generate(index + 1)),
    ...Array.from({ length: PARTITIONED_SEED_COUNT }, (_, index) =>
      generate(PARTITIONED_SEED_OFFSET + index + 1),
    ),
  ];
}

describe('memory and Redis transports agree on seeded random sequences', { concurrency: 16 }, () => {
  before(async () => {
    redisServer = await RedisServer.start();
    admin = new Redis(redisServer.url);
    await admin.config('SET', 'stream-node-max-entries', '1');
  });
  after(async () => {
    admin.disconnect();
    await redisServer.destroy();
  });

  for (const sequence of sequences()) {
    const { seed, settings, operations } = sequence;
    test(`seed ${seed}: ${operations.length} steps, historySize ${settings.historySize}, historyTtl ${settings.historyTtl}${sequence.partitions ? `, ${sequence.partitions} partitions` : ''}`, () =>
      runSequence(sequence));
  }
});

/*
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
 * Replay a failure: HUB_DIFF_SEED=<seed> (one seed, same sequence), or HUB_DIFF_REPLAY='<json>'
 * with the sequence the failure printed.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { createMetrics } from '@herald/metrics';
import { RedisServer, seededRandom, uniquePrefix, waitFor } from '@herald/testkit';
import { Redis } from 'ioredis';
import type { Transport } from '../src/transport.js';
import { MemoryTransport } from '../src/transport-memory.js';
import { RedisTransport } from '../src/transport-redis.js';
import type { Position, StoredUpdate, Update } from '../src/update.js';

const SEED_COUNT = 40;
const OPERATIONS_PER_SEED = 80;
/** Seeds with an age bound are shorter: their steps between expiries must stay within the bound. */
const OPERATIONS_PER_AGED_SEED = 24;
/**
 * The age bound of the seeded runs that have one: far above what their steps take between expiries, even
 * on a loaded machine (checked at every step: see `checkNothingAged`).
 */
const HISTORY_TTL = 2500;
/** An aged seed expires at least this often (its steps between expiries must stay within the bound). */
const MAX_STEPS_BETWEEN_EXPIRIES = 8;
/** Past any position either backend hands out. */
const END: Position = `${Number.MAX_SAFE_INTEGER}-0`;

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
  readonly operations: readonly Operation[];
}

const TOPICS = ['https://example.com/a', 'https://example.com/b/1', 'urn:topic:ü', '/relative?q=1#x'];
const DATA = ['', 'plain', 'two\nlines', 'ünïcödé ✓', '{"json":[1,2]}', ' spaced ', 'a'.repeat(300)];

function generate(seed: number): Sequence {
  const random = seededRandom(seed);
  const pick = <T>(values: readonly T[]): T => values[Math.floor(random() * values.length)] as T;
  const historySize = 1 + Math.floor(random() * 8);
  // A third of the seeded runs bound the age too; the others have no age bound.
  const historyTtl = seed % 3 === 0 ? HISTORY_TTL : 0;
  // Few ids, so repeats (entry still in history) and reuse after a trim both happen often.
  const ids = Array.from({ length: historySize + 3 }, (_, index) => `urn:diff:${seed}:${index}`);
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
      const topics = [pick(TOPICS), ...(random() < 0.3 ? [pick(TOPICS)] : [])];
      const type = random() < 0.2 ? pick(['note', 'événement']) : undefined;
      const retry = random() < 0.2 ? Math.floor(random() * 10_000) : undefined;
      const update: Update = {
        id: pick(ids),
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
        limit: 1 + Math.floor(random() * (historySize + 2)),
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
  return { seed, settings: { historySize, historyTtl }, operations };
}

/** One backend under test, with positions translated to publish ordinals. */
interface Subject {
  readonly transport: Transport;
  /** Ordinal of the publish that appended the entry at each position. */
  readonly ordinalOf: Map<Position, number>;
  /** Position each publish resolved to (an appended entry or, for a repeat, the existing one). */
  readonly positionOf: Position[];
  readonly delivered: StoredUpdate[];
  /** Hears each appended entry's position. */
  onAppended(position: Position): void;
  /** Moves the age bound past every entry in history. */
  expire(): Promise<void>;
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

async function memorySubject(settings: Settings): Promise<Subject> {
  let now = Date.now();
  const transport = new MemoryTransport({ ...settings, clock: () => now });
  const delivered: StoredUpdate[] = [];
  await transport.start((update) => delivered.push(update));
  return {
    transport,
    ordinalOf: new Map(),
    positionOf: [],
    delivered,
    onAppended() {},
    async expire() {
      now += settings.historyTtl + 1;
    },
    async checkNothingAged() {},
    close: () => transport.stop(),
  };
}

async function redisSubject(settings: Settings): Promise<Subject> {
  const metrics = createMetrics({ defaultLabels: { service: 'hub' } });
  const transport = new RedisTransport({
    url: redisServer.url,
    prefix: uniquePrefix('hub-diff'),
    ...settings,
    metrics,
    subscriptions: false,
    subscriptionsLease: 30_000,
  });
  const delivered: StoredUpdate[] = [];
  await transport.start((update) => delivered.push(update));
  const positionOf: Position[] = [];
  /** Redis time (ms) of the first entry appended since the last expire step. */
  let firstSinceExpiry: number | undefined;
  return {
    transport,
    ordinalOf: new Map(),
    onAppended(position) {
      firstSinceExpiry ??= positionMs(position);
    },
    positionOf,
    delivered,
    async expire() {
      // The history keys expire the age bound after the last append (publish-4.lua's PEXPIRE),
      // and Redis stamps that append's position from the same clock.
      const newest = Math.max(...positionOf.map(positionMs));
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
  const { transport, ordinalOf, positionOf } = subject;
  const ordinal = (position: Position | undefined) =>
    position === undefined ? undefined : (ordinalOf.get(position) ?? `unknown position ${position}`);
  const entry = ({ position, ...update }: StoredUpdate) => ({ entry: ordinal(position), ...update });
  switch (operation.kind) {
    case 'publish': {
      const published = await transport.publish(operation.update);
      if (!published.repeat) {
        ordinalOf.set(published.position, positionOf.length);
        subject.onAppended(published.position);
      }
      positionOf.push(published.position);
      return { entry: ordinal(published.position), repeat: published.repeat };
    }
    case 'find':
      return { entry: ordinal((await transport.findPosition(operation.id))?.[0]) };
    case 'read': {
      const from = operation.after === 'oldest' ? undefined : positionOf[operation.after];
      const upTo = operation.upTo === 'end' ? END : (positionOf[operation.upTo] as Position);
      return (
        await transport.readHistory(from === undefined ? undefined : [from], [upTo], operation.limit)
      ).map(entry);
    }
    case 'lastEventId':
      return { lastEventId: await transport.lastEventId() };
    case 'historyLength':
      return { historyLength: await transport.historyLength() };
    case 'expire':
      await subject.expire();
      return 'expired';
  }
}

/** Where and how the backends first disagreed. */
interface Disagreement {
  readonly step: number;
  readonly message: string;
}

/** Runs a sequence on fresh transports of both kinds; the first disagreement, if any. */
async function compare(sequence: Sequence): Promise<Disagreement | undefined> {
  const memory = await memorySubject(sequence.settings);
  const redis = await redisSubject(sequence.settings);
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
    await waitFor(() => redis.delivered.length >= memory.delivered.length, {
      what: 'the Redis listener to receive every appended entry',
    });
    const delivered = (subject: Subject) =>
      subject.delivered.map(({ position, ...update }) => ({
        entry: subject.ordinalOf.get(position),
        ...update,
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
  return Array.from({ length: SEED_COUNT }, (_, index) => generate(index + 1));
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
    test(`seed ${seed}: ${operations.length} steps, historySize ${settings.historySize}, historyTtl ${settings.historyTtl}`, () =>
      runSequence(sequence));
  }
});

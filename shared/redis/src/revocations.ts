/*
 * The token deny list's storage and its propagation to every node (issue #24 item 3;
 * docs/security.md, "Revocation"). The entry model and the per-request check are
 * `@herald/auth`'s (revocation.ts); this module stores entries and keeps each node's copy fresh.
 *
 * Keys, under the service's prefix and one hash tag (one Cluster slot, so a MULTI holds them):
 *   <prefix>revocations:{revocations}:entries  hash: field = entry id (`jti:<jti>`, `sub:<sub>`),
 *                                              value = the entry as JSON
 *   <prefix>revocations:{revocations}:expiry   sorted set: entry id by its expiresAt (entries
 *                                              without expiresAt are not in it)
 *   <prefix>revocations:{revocations}:version  counter, increased by every add and remove
 *
 * Writes are MULTI blocks (not Lua: nothing in them depends on a value read inside them) whose
 * second run gives the same state: HSET of the same field and value, ZADD of the same score,
 * ZREM/HDEL of what is already gone are no-ops; only the version counter moves twice, and a
 * version is only compared for a change, so a watcher re-reads once more and finds nothing new.
 * ioredis does not resend a MULTI whose reply was lost with its connection (it rejects it,
 * "Command aborted due to connection close", although Redis may have applied it): that is
 * answered as Redis unavailable (503, retry), and the retry of the admin call is such a second
 * run (revocations-resend.test.ts). The cap is checked before the MULTI: two admin
 * calls racing on the last free place can store one entry over it, a bound of the number of
 * concurrent admin requests, not of the list.
 *
 * Expiry is read from the node's `Clock` (tests move it), never from Redis TIME: the same time
 * the node's DenyList ignores expired entries by.
 */
import type { RedisClient } from './client.js';
import type { Clock } from './clock.js';
import { RedisUnavailableError } from './deadline.js';
import { loggableError } from './log-error.js';

/** Most entries a deny list holds: each costs every node memory and every re-read bandwidth. */
export const MAX_REVOCATIONS = 10_000;

/**
 * How often a node asks whether the list changed (ms of its clock). A revocation reaches every
 * node within this plus one Redis round trip: inside the 2 s the issue asks for, and one small
 * GET per second per node.
 */
export const REVOCATION_POLL_INTERVAL_MS = 1000;

/**
 * The list holds `limit` entries already. Not an HTTP error: each service's admin route maps it
 * to its 409 (`RevocationsFullError` of `@herald/auth`).
 */
export class RevocationLimitError extends Error {
  override readonly name = 'RevocationLimitError';
  constructor(readonly limit: number) {
    super(`the revocation list holds its maximum of ${limit} entries`);
  }
}

/**
 * What this module needs of an entry; the entry model (`RevocationEntry`), its id and its
 * validation are `@herald/auth`'s (revocation.ts), given to the stores as functions so the rules
 * exist once. `expiresAt` is in ms since the epoch; absent, the entry never expires.
 */
export interface StoredRevocation {
  readonly expiresAt?: number | undefined;
}

/** How a store names and reads entries: `revocationId` and `parseRevocationEntry` of `@herald/auth`. */
export interface RevocationCodec<Entry extends StoredRevocation> {
  readonly idOf: (entry: Entry) => string;
  /** Throws when the value is not a well-formed entry. */
  readonly parse: (value: unknown) => Entry;
}

/** Where the deny list lives; the Redis store and the in-process one give the same answers. */
export interface RevocationStore<Entry extends StoredRevocation = StoredRevocation> {
  /** Adds or replaces the entry with the same id; RevocationLimitError when the list is full. */
  add(entry: Entry): Promise<void>;
  /** Removes the entry with this id; false when there was none (a resent delete included). */
  remove(id: string): Promise<boolean>;
  /** Every entry not expired, by id. */
  list(): Promise<Entry[]>;
  /** Changes whenever an entry is added or removed. */
  version(): Promise<string>;
}

function expired(entry: StoredRevocation, now: number): boolean {
  return entry.expiresAt !== undefined && entry.expiresAt <= now;
}

function byId<Entry>(entries: Iterable<[string, Entry]>): Entry[] {
  return [...entries].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)).map(([, entry]) => entry);
}

export interface RedisRevocationStoreOptions<Entry extends StoredRevocation> {
  readonly redis: RedisClient;
  /** The service's key prefix (the hub's MERCURE_REDIS_PREFIX, the broker's BROKER_KEY_PREFIX). */
  readonly prefix: string;
  readonly clock: Clock;
  readonly codec: RevocationCodec<Entry>;
  /** Default MAX_REVOCATIONS. */
  readonly limit?: number;
}

export class RedisRevocationStore<Entry extends StoredRevocation> implements RevocationStore<Entry> {
  private readonly entriesKey: string;
  private readonly expiryKey: string;
  private readonly versionKey: string;
  private readonly limit: number;

  constructor(private readonly options: RedisRevocationStoreOptions<Entry>) {
    const base = `${options.prefix}revocations:{revocations}:`;
    this.entriesKey = `${base}entries`;
    this.expiryKey = `${base}expiry`;
    this.versionKey = `${base}version`;
    this.limit = options.limit ?? MAX_REVOCATIONS;
    // A listener, so ioredis does not print every failed reconnect of an outage to stderr: the
    // watcher logs the outage once, the service's OutageLog its connections'.
    options.redis.on('error', () => undefined);
  }

  async add(entry: Entry): Promise<void> {
    const { redis } = this.options;
    await this.prune();
    const id = this.options.codec.idOf(entry);
    const [exists, count] = await Promise.all([
      redis.hexists(this.entriesKey, id),
      redis.hlen(this.entriesKey),
    ]);
    if (exists === 0 && count >= this.limit) throw new RevocationLimitError(this.limit);
    const write = redis.multi().hset(this.entriesKey, id, JSON.stringify(entry));
    if (entry.expiresAt !== undefined) write.zadd(this.expiryKey, entry.expiresAt, id);
    else write.zrem(this.expiryKey, id);
    await execute(write.incr(this.versionKey));
  }

  async remove(id: string): Promise<boolean> {
    const replies = await execute(
      this.options.redis.multi().hdel(this.entriesKey, id).zrem(this.expiryKey, id).incr(this.versionKey),
    );
    return replies[0] === 1;
  }

  async list(): Promise<Entry[]> {
    await this.prune();
    const now = this.options.clock.now();
    const stored = await this.options.redis.hgetall(this.entriesKey);
    const entries: [string, Entry][] = [];
    for (const [id, text] of Object.entries(stored)) {
      const entry = this.read(text);
      if (entry && !expired(entry, now)) entries.push([id, entry]);
    }
    return byId(entries);
  }

  async version(): Promise<string> {
    return (await this.options.redis.get(this.versionKey)) ?? '0';
  }

  /** Drops the entries whose expiresAt has passed (on every write and list). */
  private async prune(): Promise<void> {
    const { redis, clock } = this.options;
    const due = await redis.zrangebyscore(this.expiryKey, '-inf', clock.now());
    if (due.length === 0) return;
    await execute(
      redis
        .multi()
        .hdel(this.entriesKey, ...due)
        .zrem(this.expiryKey, ...due),
    );
  }

  /** A stored entry, or undefined for one this version cannot read (it is skipped, not fatal). */
  private read(text: string): Entry | undefined {
    try {
      return this.options.codec.parse(JSON.parse(text));
    } catch {
      return undefined;
    }
  }
}

/**
 * A MULTI's replies; the first failed command's error is thrown. A transaction aborted by a lost
 * connection may have been applied: it is refused as Redis unavailable, the edge's 503 (retry).
 */
async function execute(transaction: ReturnType<RedisClient['multi']>): Promise<unknown[]> {
  let results: Awaited<ReturnType<typeof transaction.exec>>;
  try {
    results = await transaction.exec();
  } catch (error) {
    if (error instanceof Error && error.name === 'AbortError') {
      throw new RedisUnavailableError('disconnected', error.message, { cause: error });
    }
    throw error;
  }
  if (results === null) throw new Error('revocation transaction aborted');
  return results.map(([error, reply]) => {
    if (error) throw error;
    return reply;
  });
}

/** The in-process backend's store (the hub without Redis): one node, nothing survives a restart. */
export class MemoryRevocationStore<Entry extends StoredRevocation> implements RevocationStore<Entry> {
  private readonly entries = new Map<string, Entry>();
  private counter = 0;

  constructor(
    private readonly clock: Clock,
    private readonly codec: Pick<RevocationCodec<Entry>, 'idOf'>,
    private readonly limit: number = MAX_REVOCATIONS,
  ) {}

  async add(entry: Entry): Promise<void> {
    this.prune();
    const id = this.codec.idOf(entry);
    if (!this.entries.has(id) && this.entries.size >= this.limit) throw new RevocationLimitError(this.limit);
    this.entries.set(id, entry);
    this.counter += 1;
  }

  async remove(id: string): Promise<boolean> {
    this.counter += 1;
    return this.entries.delete(id);
  }

  async list(): Promise<Entry[]> {
    this.prune();
    return byId(this.entries.entries());
  }

  async version(): Promise<string> {
    return String(this.counter);
  }

  private prune(): void {
    const now = this.clock.now();
    for (const [id, entry] of this.entries) if (expired(entry, now)) this.entries.delete(id);
  }
}

/**
 * The pino-style method the watcher logs with. Info, not warn: a Redis outage is the service's
 * OutageLog warning already (one per outage, docs/contracts.md); these lines say what it means
 * for the deny list.
 */
export interface RevocationWatcherLogger {
  info(details: object, message: string): void;
}

export interface RevocationWatcherOptions<Entry extends StoredRevocation> {
  readonly store: RevocationStore<Entry>;
  /** The node's copy: replaced with the stored list at every change (a DenyList of `@herald/auth`). */
  readonly denyList: { replace(entries: readonly Entry[]): Entry[] };
  readonly clock: Clock;
  readonly log: RevocationWatcherLogger;
  /** Default REVOCATION_POLL_INTERVAL_MS. */
  readonly interval?: number;
  /** Called with the entries a refresh found new (the hub closes the streams they cover). */
  readonly onAdded?: (entries: readonly Entry[]) => void;
}

/**
 * Keeps a node's DenyList equal to the stored list: loads it at start, then asks for the version
 * every `interval` ms of the node's clock and re-reads the list when it changed. While storage
 * cannot answer the node keeps its last list (a revocation already known stays applied) and
 * logs one line when the outage starts and one when it ends, never one per poll.
 */
export class RevocationWatcher<Entry extends StoredRevocation> {
  private readonly interval: number;
  private seenVersion: string | undefined;
  private cancelTimer: (() => void) | undefined;
  private running: Promise<void> | undefined;
  private failing = false;
  private stopped = false;
  private loadedOnce = false;

  constructor(private readonly options: RevocationWatcherOptions<Entry>) {
    this.interval = options.interval ?? REVOCATION_POLL_INTERVAL_MS;
  }

  /**
   * Loads the list (a failure is logged, not thrown: the next polls retry) and starts polling.
   * A node need not wait for it to listen (Redis may be away at boot): `loaded` is its readiness.
   */
  async start(): Promise<void> {
    await this.refresh();
    this.schedule();
  }

  /**
   * Reads the version, and the list when it changed. The admin routes call it after a write so
   * the node that took the call applies it before answering: a read already under way may have
   * missed the write, so this waits for it and reads again (calls that meet then share one read).
   */
  async refresh(): Promise<void> {
    if (this.running) await this.running;
    this.running ??= this.poll().finally(() => {
      this.running = undefined;
    });
    return this.running;
  }

  /** Whether the list has been read once: until then a node must not be ready for traffic. */
  get loaded(): boolean {
    return this.loadedOnce;
  }

  /** Resolves once the read under way, if any, has been applied (a test waits on a poll it caused). */
  async settled(): Promise<void> {
    await this.running;
  }

  async stop(): Promise<void> {
    this.stopped = true;
    this.cancelTimer?.();
    await this.running;
  }

  private schedule(): void {
    if (this.stopped) return;
    const { clock } = this.options;
    this.cancelTimer = clock.timer(clock.now() + this.interval, () => {
      void this.refresh().finally(() => this.schedule());
    });
  }

  private async poll(): Promise<void> {
    const { store, denyList, log } = this.options;
    try {
      const version = await store.version();
      if (version !== this.seenVersion) {
        const entries = await store.list();
        this.seenVersion = version;
        const added = denyList.replace(entries);
        if (added.length > 0) this.options.onAdded?.(added);
      }
      this.loadedOnce = true;
      if (this.failing) {
        this.failing = false;
        log.info({}, 'revocation list readable again');
      }
    } catch (error) {
      if (!this.failing) {
        this.failing = true;
        log.info(
          { error: loggableError(error) },
          'cannot read the revocation list: keeping the last one read until storage answers',
        );
      }
    }
  }
}

import { randomUUID } from 'node:crypto';
import { fileURLToPath } from 'node:url';
import type { Metrics } from '@herald/metrics';
import {
  createRedis,
  hashTag,
  instrumentRedis,
  keyspace,
  type LuaScript,
  loadScripts,
  loggableError,
  OutageLog,
  parseRedisOptions,
  pipelineScript,
  type Redis,
  redisTarget,
  replyWithin,
  runScript,
  type ScriptSet,
} from '@herald/redis';
import { backendUnavailable } from './errors.js';
import type { HubMetrics } from './metrics.js';
import { RedisClock } from './redis-clock.js';
import type { Published, SubscriptionRecord, Transport, UpdateListener } from './transport.js';
import {
  comparePositions,
  decodeUpdate,
  encodeUpdate,
  ORIGIN_POSITION,
  type Position,
  type StoredUpdate,
  type Update,
} from './update.js';

/** `services/hub/lua/`, from src (tsx) and from dist alike. */
export const LUA_DIRECTORY = fileURLToPath(new URL('../lua/', import.meta.url));

export interface RedisTransportOptions {
  readonly url: string;
  /** Key and channel prefix (MERCURE_REDIS_PREFIX). */
  readonly prefix: string;
  readonly historySize: number;
  readonly historyTtl: number;
  readonly metrics: Metrics;
  readonly hubMetrics: HubMetrics;
  /** Maintain the cluster-wide active subscriptions registry with a lease per node. */
  readonly subscriptions: boolean;
  readonly subscriptionsLease: number;
  /** Interval between end-to-end pub/sub probes while healthy (default 5 s). */
  readonly probeInterval?: number;
  /** A probe not back within this bound marks the pub/sub path unverified (default 2 s). */
  readonly probeTimeout?: number;
  readonly log?: (level: 'info' | 'warn' | 'error', message: string, details?: object) => void;
}

const PROBE_PREFIX = 'probe\n';
/** How long a reap's claim is kept for a resend of the same call (ms). */
const REAP_CLAIM_TTL = 60_000;
const HISTORY_PAGE = 1000;
/** Live messages held while a gap is being filled; beyond it the fill starts over. */
const RECOVERY_BUFFER_LIMIT = 100_000;
/** A publish not answered within this bound is answered 503 (docs/hub.md, resent publishes). */
const PUBLISH_TIMEOUT = 5000;
/**
 * Redis refuses a publish script that starts later than this after the node sent it: shorter than
 * PUBLISH_TIMEOUT, so a publish the node answered 503 can never be applied afterwards (a stalled
 * Redis resuming, a command still in a socket buffer), and a reply has the difference to travel.
 */
const PUBLISH_SCRIPT_BUDGET = 4000;

type StreamEntry = [string, string[]];

/** publish-3.lua's reply: the position, and 1 when the id was already in history. */
type PublishReply = [Position, 0 | 1];

interface PendingPublish {
  readonly args: (string | number)[];
  readonly resolve: (published: Published) => void;
  readonly reject: (error: unknown) => void;
}

function isNoScript(error: unknown): boolean {
  return error instanceof Error && error.message.startsWith('NOSCRIPT');
}

function decodeEntry([position, fields]: StreamEntry): StoredUpdate {
  const index = fields.indexOf('u');
  return decodeUpdate(position, fields[index + 1] as string);
}

/**
 * Redis backend. History is one stream; publishing is one Lua script (XADD + PUBLISH with the
 * position stamped in the message); each node SUBSCRIBEs once and fans out locally.
 *
 * Delivery invariant: the listener sees positions strictly increasing. After any (re)subscription
 * the node buffers live messages, verifies the path end to end with a probe, reads the history
 * after the last position it dispatched, then flushes the buffer; duplicates are dropped by
 * position. So a Redis restart or failover costs latency, never an update within the history bounds.
 */
export class RedisTransport implements Transport {
  readonly kind = 'redis' as const;
  readonly nodeId = randomUUID();
  private readonly command: Redis;
  /**
   * Publishes (and the probe) go through their own fail-fast connection: while Redis is away a
   * publish fails at once instead of waiting in ioredis's offline queue, and a publish in flight
   * when the connection drops is failed, not resent later (docs/hub.md, resent publishes).
   */
  private readonly publisher: Redis;
  private readonly subscriber: Redis;
  private readonly clock: RedisClock;
  private readonly outages: OutageLog;
  private readonly scripts: ScriptSet;
  private readonly keys;
  private listener: UpdateListener | undefined;
  private lastPosition: Position = ORIGIN_POSITION;

  private recovering = true;
  private recoveryBuffer: string[] = [];
  private recoveryBufferOverflowed = false;
  private needsGapFill = true;
  private verified = false;
  private subscriberReadyCount = 0;
  private readonly pendingProbes = new Map<string, () => void>();
  private probeTimer: NodeJS.Timeout | undefined;
  private probing = false;
  private firstVerification: (() => void) | undefined;
  private stopped = false;
  /** The history tail could not be read at start: the first recovery reads it instead of filling. */
  private baselineUnknown = false;

  /** Publishes of the current event loop turn, sent as one pipeline (one write, one round trip). */
  private pendingPublishes: PendingPublish[] = [];
  private readonly localSubscriptions = new Map<string, SubscriptionRecord>();
  private leaseTimer: NodeJS.Timeout | undefined;
  private orphanHandler: ((records: SubscriptionRecord[]) => void) | undefined;

  constructor(private readonly options: RedisTransportOptions) {
    const space = keyspace(`${options.prefix}${hashTag('hub')}:`);
    this.keys = {
      history: space.key('history'),
      historyIds: space.key('history-ids'),
      historyIdsByTime: space.key('history-ids-by-time'),
      channel: space.key('updates'),
      subscriptions: space.key('subscriptions'),
      leases: space.key('node-leases'),
      nodeSubscriptionsPrefix: space.key('node-subscriptions', ''),
      reapClaimPrefix: space.key('reap-claim', ''),
      nodeSubscriptions: space.key('node-subscriptions', this.nodeId),
    };
    this.scripts = loadScripts(LUA_DIRECTORY);
    this.command = createRedis(parseRedisOptions(options.url, { connectionName: 'herald-hub-command' }));
    this.publisher = createRedis(
      parseRedisOptions(options.url, { connectionName: 'herald-hub-publisher', failFast: true }),
    );
    this.subscriber = createRedis(
      parseRedisOptions(options.url, { connectionName: 'herald-hub-subscriber', forSubscriber: true }),
    );
    instrumentRedis(this.command, options.metrics.redisCommandDuration);
    instrumentRedis(this.publisher, options.metrics.redisCommandDuration);
    // Outages surface through readiness and two log lines (lost, back); without an 'error'
    // listener ioredis would print every retry.
    this.outages = new OutageLog(
      {
        warn: (details, message) => this.log('warn', message, details),
        info: (details, message) => this.log('info', message, details),
      },
      redisTarget(options.url),
    );
    this.outages.watch(this.command, 'herald-hub-command');
    this.outages.watch(this.publisher, 'herald-hub-publisher');
    this.outages.watch(this.subscriber, 'herald-hub-subscriber');
    this.clock = new RedisClock(this.publisher);
  }

  private script(name: string): LuaScript {
    const script = this.scripts.get(name);
    if (!script) throw new Error(`Lua script ${name} missing from ${LUA_DIRECTORY}`);
    return script;
  }

  get lastDispatchedPosition(): Position {
    return this.lastPosition;
  }

  async start(listener: UpdateListener): Promise<void> {
    this.listener = listener;
    this.subscriber.on('ready', () => this.onSubscriptionEstablished());
    this.subscriber.on('close', () => this.onSubscriptionLost());
    this.subscriber.on('message', (_channel: string, message: string) => this.onMessage(message));
    // The baseline position is read before subscribing, so the first gap fill covers whatever is
    // published between this read and the subscription becoming active.
    const verified = new Promise<void>((resolve) => {
      this.firstVerification = resolve;
    });
    try {
      const tail = (await replyWithin(
        this.command.xrevrange(this.keys.history, '+', '-', 'COUNT', 1),
        2000,
        'XREVRANGE',
      )) as StreamEntry[];
      if (tail[0]) this.lastPosition = tail[0][0];
    } catch (error) {
      this.baselineUnknown = true;
      this.log('warn', 'could not read the history tail at start; Redis unreachable?', {
        err: loggableError(error),
      });
    }
    // Not awaited: while Redis is down the command waits in the offline queue, and the node must
    // still start (alive, not ready) and keep probing.
    this.subscriber.subscribe(this.keys.channel).catch(() => undefined);
    if (this.subscriber.status === 'ready') this.scheduleProbe(0);
    if (this.options.subscriptions) this.scheduleLease(0);
    // Boot waits for a verified pub/sub path, but not forever: a node that cannot verify it starts
    // not-ready and keeps probing.
    let timer: NodeJS.Timeout | undefined;
    await Promise.race([verified, new Promise((resolve) => (timer = setTimeout(resolve, 3000)))]);
    clearTimeout(timer);
  }

  private log(level: 'info' | 'warn' | 'error', message: string, details?: object): void {
    this.options.log?.(level, message, details);
  }

  private onSubscriptionLost(): void {
    if (this.stopped) return;
    this.recovering = true;
    this.needsGapFill = true;
    this.setVerified(false);
  }

  private onSubscriptionEstablished(): void {
    if (this.stopped) return;
    this.subscriberReadyCount += 1;
    if (this.subscriberReadyCount > 1) {
      this.options.hubMetrics.pubsubReconnects.inc();
      this.log('warn', 'fan-out subscription re-established; filling the gap from history', {
        after: this.lastPosition,
      });
    }
    this.recovering = true;
    this.needsGapFill = true;
    this.setVerified(false);
    this.scheduleProbe(0);
  }

  private setVerified(verified: boolean): void {
    this.verified = verified;
    this.options.hubMetrics.pubsubProbeOk.set(verified ? 1 : 0);
    if (verified && this.firstVerification) {
      this.firstVerification();
      this.firstVerification = undefined;
    }
  }

  private onMessage(message: string): void {
    if (message.startsWith(PROBE_PREFIX)) {
      this.pendingProbes.get(message.slice(PROBE_PREFIX.length))?.();
      return;
    }
    if (this.recovering) {
      if (this.recoveryBuffer.length >= RECOVERY_BUFFER_LIMIT) {
        this.recoveryBufferOverflowed = true;
        this.recoveryBuffer = [];
      }
      this.recoveryBuffer.push(message);
      return;
    }
    this.deliverMessage(message);
  }

  private deliverMessage(message: string): void {
    const newline = message.indexOf('\n');
    const position = message.slice(0, newline);
    if (comparePositions(position, this.lastPosition) <= 0) return;
    this.deliver(decodeUpdate(position, message.slice(newline + 1)));
  }

  private deliver(update: StoredUpdate): void {
    if (comparePositions(update.position, this.lastPosition) <= 0) return;
    this.lastPosition = update.position;
    this.listener?.(update);
  }

  private scheduleProbe(delay: number): void {
    if (this.stopped) return;
    clearTimeout(this.probeTimer);
    this.probeTimer = setTimeout(() => void this.runProbe(), delay);
  }

  /**
   * The node publishes a probe on its own fan-out channel and must receive it back: a connected
   * subscriber socket is not proof that messages flow (a failed-over primary may have no
   * subscription for us), so readiness rests on this round trip.
   */
  private async runProbe(): Promise<void> {
    if (this.probing || this.stopped) return;
    this.probing = true;
    let ok = false;
    try {
      ok = await this.probe();
      if (ok && this.needsGapFill) {
        await this.fillGap();
        this.needsGapFill = false;
      }
    } catch (error) {
      ok = false;
      // During an outage every probe fails: the outage's own line says it once.
      if (!this.outages.down)
        this.log('warn', 'pub/sub recovery failed; retrying', { err: loggableError(error) });
    } finally {
      this.probing = false;
    }
    if (!ok) {
      // Messages may have been lost silently: buffer live traffic until the next fill.
      this.recovering = true;
      this.needsGapFill = true;
    }
    this.setVerified(ok);
    const interval = this.options.probeInterval ?? 5000;
    this.scheduleProbe(ok ? interval : Math.min(500, interval));
  }

  private async probe(): Promise<boolean> {
    const nonce = randomUUID();
    const timeout = this.options.probeTimeout ?? 2000;
    const arrived = new Promise<void>((resolve) => this.pendingProbes.set(nonce, resolve));
    try {
      if (this.publisher.status !== 'ready' || this.subscriber.status !== 'ready') return false;
      await this.clock.measure();
      await replyWithin(
        this.publisher.publish(this.keys.channel, PROBE_PREFIX + nonce),
        timeout,
        'probe publish',
      );
      await replyWithin(arrived, timeout, 'probe delivery');
      return true;
    } catch {
      return false;
    } finally {
      this.pendingProbes.delete(nonce);
    }
  }

  /** Reads history after the last dispatched position, then flushes the live buffer. */
  private async fillGap(): Promise<void> {
    if (this.baselineUnknown) {
      // Started while Redis was down: nothing was dispatched yet, so the baseline is the tail now,
      // not the whole history (which would flood early subscribers with old updates).
      this.recoveryBuffer = [];
      const tail = (await this.command.xrevrange(this.keys.history, '+', '-', 'COUNT', 1)) as StreamEntry[];
      if (tail[0] && comparePositions(tail[0][0], this.lastPosition) > 0) this.lastPosition = tail[0][0];
      this.baselineUnknown = false;
    }
    for (;;) {
      this.recoveryBuffer = [];
      this.recoveryBufferOverflowed = false;
      for (;;) {
        const page = await this.readHistoryRaw(this.lastPosition, '+', HISTORY_PAGE);
        for (const entry of page) this.deliver(decodeEntry(entry));
        if (page.length < HISTORY_PAGE) break;
      }
      if (!this.recoveryBufferOverflowed) break;
    }
    const buffered = this.recoveryBuffer;
    this.recoveryBuffer = [];
    this.recovering = false;
    for (const message of buffered) this.deliverMessage(message);
  }

  private async readHistoryRaw(
    after: Position | undefined,
    upTo: string,
    limit: number,
  ): Promise<StreamEntry[]> {
    return (await this.command.xrange(
      this.keys.history,
      after === undefined ? '-' : `(${after}`,
      upTo,
      'COUNT',
      limit,
    )) as StreamEntry[];
  }

  async publish(update: Update): Promise<Published> {
    if (this.publisher.status !== 'ready') throw backendUnavailable();
    try {
      if (!this.clock.known) await this.clock.measure();
      return await new Promise<Published>((resolve, reject) => {
        const args = [
          this.keys.channel,
          update.id,
          encodeUpdate(update),
          this.options.historySize,
          this.options.historyTtl,
        ];
        this.pendingPublishes.push({ args, resolve, reject });
        if (this.pendingPublishes.length === 1) setImmediate(() => this.flushPublishes());
      });
    } catch (error) {
      this.log('error', 'publish failed', { err: loggableError(error) });
      throw backendUnavailable();
    }
  }

  /**
   * Sends the publishes gathered during one event loop turn as one pipeline: one socket write and
   * one round trip instead of one each (profile of the publish path: the per-command write syscall
   * was the top frame). Each script still runs atomically, in arrival order; one timer bounds the
   * whole batch.
   */
  private flushPublishes(): void {
    const batch = this.pendingPublishes;
    this.pendingPublishes = [];
    const keys = [this.keys.history, this.keys.historyIds, this.keys.historyIdsByTime];
    const script = this.script('publish');
    const deadlineMs = this.clock.deadline(PUBLISH_SCRIPT_BUDGET);
    if (deadlineMs === undefined) {
      // The connection dropped since publish() checked: nothing was sent.
      for (const pending of batch) pending.reject(new Error('publish: Redis connection lost'));
      return;
    }
    const deadline = String(deadlineMs);
    let unsettled = batch.length;
    const settle = (pending: PendingPublish, error: unknown, reply?: PublishReply) => {
      if (error) pending.reject(error);
      else {
        const [position, repeat] = reply as PublishReply;
        pending.resolve({ position, repeat: repeat === 1 });
      }
      unsettled -= 1;
      if (unsettled === 0) clearTimeout(timer);
    };
    const timer = setTimeout(() => {
      // Later replies are ignored: a promise settles once.
      const error = new Error(`publish: no reply within ${PUBLISH_TIMEOUT} ms`);
      for (const pending of batch) pending.reject(error);
    }, PUBLISH_TIMEOUT);
    const pipeline = this.publisher.pipeline();
    for (const pending of batch) pipelineScript(pipeline, script, keys, [...pending.args, deadline]);
    pipeline.exec().then(
      (results) => {
        batch.forEach((pending, index) => {
          const [error, reply] = results?.[index] ?? [new Error('publish: no reply'), null];
          // After a Redis restart the script cache is empty: EVAL reloads it.
          if (isNoScript(error)) {
            runScript<PublishReply>(this.publisher, script, keys, [...pending.args, deadline]).then(
              (reloaded) => settle(pending, undefined, reloaded),
              (retryError: unknown) => settle(pending, retryError),
            );
          } else {
            settle(pending, error, reply as PublishReply);
          }
        });
      },
      (error: unknown) => {
        for (const pending of batch) settle(pending, error);
      },
    );
  }

  async findPosition(eventId: string): Promise<Position | undefined> {
    const position = await runScript<string | null>(
      this.command,
      this.script('find'),
      [this.keys.historyIds, this.keys.history],
      [eventId],
    );
    return position ?? undefined;
  }

  async readHistory(after: Position | undefined, upTo: Position, limit: number): Promise<StoredUpdate[]> {
    return (await this.readHistoryRaw(after, upTo, limit)).map(decodeEntry);
  }

  async lastEventId(): Promise<string | undefined> {
    const tail = (await this.command.xrevrange(this.keys.history, '+', '-', 'COUNT', 1)) as StreamEntry[];
    return tail[0] ? decodeEntry(tail[0]).id : undefined;
  }

  async historyLength(): Promise<number> {
    // Scraped by /metrics: must answer (or fail) quickly even while Redis is down.
    if (this.command.status !== 'ready') throw backendUnavailable();
    return replyWithin(this.command.xlen(this.keys.history), 1000, 'XLEN');
  }

  async readiness(): Promise<string | undefined> {
    if (this.command.status !== 'ready') return `Redis connection ${this.command.status}`;
    if (this.publisher.status !== 'ready') return `Redis connection ${this.publisher.status} (publisher)`;
    if (!this.verified) return 'pub/sub path not verified (probe pending or failed)';
    return undefined;
  }

  // --- active subscriptions registry (cluster-wide) -------------------------------------------

  async addSubscriptions(records: readonly SubscriptionRecord[]): Promise<void> {
    if (records.length === 0) return;
    for (const record of records) this.localSubscriptions.set(record.id, record);
    await this.writeRecords(records);
  }

  private async writeRecords(records: readonly SubscriptionRecord[]): Promise<void> {
    const fields: string[] = [];
    for (const record of records) fields.push(record.id, JSON.stringify(record));
    await this.command
      .multi()
      .hset(this.keys.subscriptions, ...fields)
      .sadd(this.keys.nodeSubscriptions, ...records.map((record) => record.id))
      .zadd(this.keys.leases, Date.now() + this.options.subscriptionsLease, this.nodeId)
      .exec();
  }

  async removeSubscriptions(ids: readonly string[]): Promise<void> {
    if (ids.length === 0) return;
    for (const id of ids) this.localSubscriptions.delete(id);
    await this.command
      .multi()
      .hdel(this.keys.subscriptions, ...ids)
      .srem(this.keys.nodeSubscriptions, ...ids)
      .exec();
  }

  async listSubscriptions(): Promise<SubscriptionRecord[]> {
    const values = await this.command.hvals(this.keys.subscriptions);
    return values.map((value) => JSON.parse(value) as SubscriptionRecord);
  }

  onOrphanedSubscriptions(handler: (records: SubscriptionRecord[]) => void): void {
    this.orphanHandler = handler;
  }

  private scheduleLease(delay: number): void {
    if (this.stopped) return;
    this.leaseTimer = setTimeout(() => void this.renewLeaseAndReap(), delay);
  }

  /** Renews this node's lease, then claims (once, atomically) the entries of expired nodes. */
  private async renewLeaseAndReap(): Promise<void> {
    try {
      const held = await runScript<number>(
        this.command,
        this.script('lease-renew'),
        [this.keys.leases, this.keys.nodeSubscriptions],
        [this.nodeId, Date.now() + this.options.subscriptionsLease],
      );
      if (held === 0 && this.localSubscriptions.size > 0) {
        // Our lease lapsed (a long pause or a partition) and a peer reaped our entries: the
        // subscribers are still here, so register them again.
        this.log('warn', 'subscription lease had expired; re-registering entries', {
          count: this.localSubscriptions.size,
        });
        await this.writeRecords([...this.localSubscriptions.values()]);
      }
      const claimed = await runScript<string[]>(
        this.command,
        this.script('reap'),
        [this.keys.leases, this.keys.subscriptions, `${this.keys.reapClaimPrefix}${randomUUID()}`],
        [Date.now(), this.keys.nodeSubscriptionsPrefix, REAP_CLAIM_TTL],
      );
      if (claimed.length > 0) {
        this.orphanHandler?.(claimed.map((text) => JSON.parse(text) as SubscriptionRecord));
      }
    } catch (error) {
      if (!this.outages.down) {
        this.log('warn', 'subscription lease renewal failed', { err: loggableError(error) });
      }
    }
    this.scheduleLease(Math.max(250, Math.floor(this.options.subscriptionsLease / 3)));
  }

  async stop(): Promise<void> {
    this.stopped = true;
    clearTimeout(this.probeTimer);
    clearTimeout(this.leaseTimer);
    this.listener = undefined;
    if (this.options.subscriptions && this.command.status === 'ready') {
      await replyWithin(
        this.command.multi().zrem(this.keys.leases, this.nodeId).del(this.keys.nodeSubscriptions).exec(),
        1000,
        'lease release',
      ).catch(() => undefined);
    }
    this.subscriber.disconnect();
    // QUIT waits in the offline queue while Redis is unreachable: never let it hold up an exit.
    for (const connection of [this.command, this.publisher]) {
      if (connection.status === 'ready') {
        await replyWithin(connection.quit(), 1000, 'QUIT').catch(() => undefined);
      }
      connection.disconnect();
    }
  }
}

import { randomUUID } from 'node:crypto';
import { EventEmitter } from 'node:events';
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
  type Redis,
  redisTarget,
  replyWithin,
  runScript,
  type ScriptSet,
} from '@herald/redis';
import { TransportUnavailableError } from './errors.js';
import { RedisClock } from './redis-clock.js';
import type {
  Published,
  SubscriptionRecord,
  Transport,
  TransportEvents,
  TransportLog,
  UpdateListener,
} from './transport.js';
import { RedisFanout } from './transport-redis-fanout.js';
import { decodeEntry, readEntries, readNewestEntry } from './transport-redis-history.js';
import { RedisPublisher } from './transport-redis-publish.js';
import { RedisSubscriptionRegistry } from './transport-redis-registry.js';
import type { Position, StoredUpdate, Update } from './update.js';

/** `services/hub/lua/`, from src (tsx) and from dist alike. */
export const LUA_DIRECTORY = fileURLToPath(new URL('../lua/', import.meta.url));

/** Boot waits this long for a verified pub/sub path, then starts not-ready and keeps probing. */
const FIRST_VERIFICATION_TIMEOUT = 3000;

export interface RedisTransportOptions {
  readonly url: string;
  /** Key and channel prefix (MERCURE_REDIS_PREFIX). */
  readonly prefix: string;
  readonly historySize: number;
  readonly historyTtl: number;
  /** The process registry: Redis command durations are recorded there. */
  readonly metrics: Metrics;
  /** Maintain the cluster-wide active subscriptions registry with a lease per node. */
  readonly subscriptions: boolean;
  readonly subscriptionsLease: number;
  /** Interval between end-to-end pub/sub probes while healthy (default 5 s). */
  readonly probeInterval?: number;
  /** A probe not back within this bound marks the pub/sub path unverified (default 2 s). */
  readonly probeTimeout?: number;
  readonly log?: TransportLog;
}

/**
 * Redis backend. History is one stream; publishing is one Lua script (XADD + PUBLISH with the
 * position stamped in the message, transport-redis-publish.ts); each node SUBSCRIBEs once and fans
 * out locally (transport-redis-fanout.ts); the active subscriptions registry lives beside it
 * (transport-redis-registry.ts). This class owns the connections and answers history reads.
 */
export class RedisTransport implements Transport {
  readonly kind = 'redis' as const;
  readonly events = new EventEmitter<TransportEvents>();
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
  private readonly fanout: RedisFanout;
  private readonly publishes: RedisPublisher;
  private readonly registry: RedisSubscriptionRegistry;

  constructor(private readonly options: RedisTransportOptions) {
    const space = keyspace(`${options.prefix}${hashTag('hub')}:`);
    this.keys = {
      history: space.key('history'),
      historyIds: space.key('history-ids'),
      historyIdsByTime: space.key('history-ids-by-time'),
      channel: space.key('updates'),
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
    const log: TransportLog = (level, message, details) => this.log(level, message, details);
    this.fanout = new RedisFanout({
      subscriber: this.subscriber,
      publisher: this.publisher,
      command: this.command,
      clock: this.clock,
      outages: this.outages,
      historyKey: this.keys.history,
      channel: this.keys.channel,
      events: this.events,
      log,
      ...(options.probeInterval !== undefined ? { probeInterval: options.probeInterval } : {}),
      ...(options.probeTimeout !== undefined ? { probeTimeout: options.probeTimeout } : {}),
    });
    this.publishes = new RedisPublisher({
      publisher: this.publisher,
      clock: this.clock,
      script: this.script('publish'),
      keys: [this.keys.history, this.keys.historyIds, this.keys.historyIdsByTime],
      channel: this.keys.channel,
      historySize: options.historySize,
      historyTtl: options.historyTtl,
    });
    this.registry = new RedisSubscriptionRegistry({
      command: this.command,
      nodeId: this.nodeId,
      keys: {
        subscriptions: space.key('subscriptions'),
        leases: space.key('node-leases'),
        nodeSubscriptions: space.key('node-subscriptions', this.nodeId),
        nodeSubscriptionsPrefix: space.key('node-subscriptions', ''),
        reapClaimPrefix: space.key('reap-claim', ''),
      },
      leaseRenewScript: this.script('lease-renew'),
      reapScript: this.script('reap'),
      lease: options.subscriptionsLease,
      outages: this.outages,
      log,
    });
  }

  private script(name: string): LuaScript {
    const script = this.scripts.get(name);
    if (!script) throw new Error(`Lua script ${name} missing from ${LUA_DIRECTORY}`);
    return script;
  }

  private log(level: 'info' | 'warn' | 'error', message: string, details?: object): void {
    this.options.log?.(level, message, details);
  }

  get lastDispatchedPosition(): Position {
    return this.fanout.lastDispatchedPosition;
  }

  async start(listener: UpdateListener): Promise<void> {
    const { verified } = await this.fanout.start(listener);
    if (this.options.subscriptions) this.registry.start();
    // Boot waits for a verified pub/sub path, but not forever: a node that cannot verify it starts
    // not-ready and keeps probing.
    await replyWithin(verified, FIRST_VERIFICATION_TIMEOUT, 'first pub/sub verification').catch(
      () => undefined,
    );
  }

  async publish(update: Update): Promise<Published> {
    if (this.publisher.status !== 'ready') {
      throw new TransportUnavailableError(`Redis publish connection ${this.publisher.status}`);
    }
    try {
      if (!this.clock.known) await this.clock.measure();
      return await this.publishes.publish(update);
    } catch (error) {
      this.log('error', 'publish failed', { err: loggableError(error) });
      throw new TransportUnavailableError('publish failed', { cause: error });
    }
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
    return (await readEntries(this.command, this.keys.history, after, upTo, limit)).map(decodeEntry);
  }

  async lastEventId(): Promise<string | undefined> {
    const newest = await readNewestEntry(this.command, this.keys.history);
    return newest ? decodeEntry(newest).id : undefined;
  }

  async historyLength(): Promise<number> {
    // Scraped by /metrics: must answer (or fail) quickly even while Redis is down.
    if (this.command.status !== 'ready') {
      throw new TransportUnavailableError(`Redis command connection ${this.command.status}`);
    }
    return replyWithin(this.command.xlen(this.keys.history), 1000, 'XLEN');
  }

  async readiness(): Promise<string | undefined> {
    if (this.command.status !== 'ready') return `Redis connection ${this.command.status}`;
    if (this.publisher.status !== 'ready') return `Redis connection ${this.publisher.status} (publisher)`;
    if (!this.fanout.verified) return 'pub/sub path not verified (probe pending or failed)';
    return undefined;
  }

  addSubscriptions(records: readonly SubscriptionRecord[]): Promise<void> {
    return this.registry.add(records);
  }

  removeSubscriptions(ids: readonly string[]): Promise<void> {
    return this.registry.remove(ids);
  }

  listSubscriptions(): Promise<SubscriptionRecord[]> {
    return this.registry.list();
  }

  onOrphanedSubscriptions(handler: (records: SubscriptionRecord[]) => void): void {
    this.registry.onOrphaned(handler);
  }

  async stop(): Promise<void> {
    this.fanout.stop();
    await this.registry.stop();
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

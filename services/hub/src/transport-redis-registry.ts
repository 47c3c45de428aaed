import { randomUUID } from 'node:crypto';
import {
  type Clock,
  type LuaScript,
  loggableError,
  type OutageLog,
  type RedisClient,
  runScript,
  settleWithin,
} from '@herald/redis';
import type { SubscriptionRecord, TransportLog } from './transport.js';

/** How long a reap's claim is kept for a resend of the same call (ms). */
const REAP_CLAIM_TTL = 60_000;
/** Expired nodes claimed per lease round, so one round does bounded work. */
const REAP_BATCH = 16;

export interface RedisSubscriptionRegistryOptions {
  /** Writes and the lease: they wait out an outage in the offline queue. */
  readonly command: RedisClient;
  /** Reads for a request (`list`): the deadline connection, refused at once during an outage. */
  readonly reader: RedisClient;
  readonly nodeId: string;
  readonly keys: {
    /** hash: subscription id -> record (JSON), cluster-wide. */
    readonly subscriptions: string;
    /** sorted set: node id scored by its lease's expiry. */
    readonly leases: string;
    /** set: this node's subscription ids. */
    readonly nodeSubscriptions: string;
    readonly nodeSubscriptionsPrefix: string;
    readonly reapClaimPrefix: string;
  };
  readonly leaseRenewScript: LuaScript;
  readonly reapScript: LuaScript;
  /** Lease length (ms); renewed every third of it. */
  readonly lease: number;
  /** Lease scores, the reap's "now" and the renewal timer (the scripts take time as arguments). */
  readonly clock: Clock;
  readonly outages: OutageLog;
  readonly log: TransportLog;
}

/**
 * The cluster-wide active subscriptions registry (hub.md, active subscriptions): every node writes
 * its entries under a lease it renews, and claims, once, the entries of nodes whose lease expired.
 */
export class RedisSubscriptionRegistry {
  private readonly localSubscriptions = new Map<string, SubscriptionRecord>();
  /** Cancels the next lease round. */
  private leaseTimer: (() => void) | undefined;
  private orphanHandler: ((records: SubscriptionRecord[]) => void) | undefined;
  private started = false;
  private stopped = false;

  constructor(private readonly options: RedisSubscriptionRegistryOptions) {}

  /** Starts renewing this node's lease and reaping departed nodes' entries. */
  start(): void {
    this.started = true;
    this.scheduleLease(0);
  }

  async add(records: readonly SubscriptionRecord[]): Promise<void> {
    if (records.length === 0) return;
    for (const record of records) this.localSubscriptions.set(record.id, record);
    await this.write(records);
  }

  private async write(records: readonly SubscriptionRecord[]): Promise<void> {
    const { command, keys, nodeId, lease } = this.options;
    const fields: string[] = [];
    for (const record of records) fields.push(record.id, JSON.stringify(record));
    await command
      .multi()
      .hset(keys.subscriptions, ...fields)
      .sadd(keys.nodeSubscriptions, ...records.map((record) => record.id))
      .zadd(keys.leases, this.options.clock.now() + lease, nodeId)
      .exec();
  }

  async remove(ids: readonly string[]): Promise<void> {
    if (ids.length === 0) return;
    const { command, keys } = this.options;
    for (const id of ids) this.localSubscriptions.delete(id);
    await command
      .multi()
      .hdel(keys.subscriptions, ...ids)
      .srem(keys.nodeSubscriptions, ...ids)
      .exec();
  }

  async list(): Promise<SubscriptionRecord[]> {
    const values = await this.options.reader.hvals(this.options.keys.subscriptions);
    return values.map((value) => JSON.parse(value) as SubscriptionRecord);
  }

  onOrphaned(handler: (records: SubscriptionRecord[]) => void): void {
    this.orphanHandler = handler;
  }

  private scheduleLease(delay: number): void {
    if (this.stopped) return;
    const { clock } = this.options;
    this.leaseTimer = clock.timer(clock.now() + delay, () => void this.renewLeaseAndReap());
  }

  /** Renews this node's lease, then claims (once, atomically) the entries of expired nodes. */
  private async renewLeaseAndReap(): Promise<void> {
    const { command, keys, nodeId, lease, log, clock } = this.options;
    try {
      const held = await runScript<number>(
        command,
        this.options.leaseRenewScript,
        [keys.leases, keys.nodeSubscriptions],
        [nodeId, clock.now() + lease],
      );
      if (held === 0 && this.localSubscriptions.size > 0) {
        // Our lease lapsed (a long pause or a partition) and a peer reaped our entries: the
        // subscribers are still here, so register them again.
        log('warn', 'subscription lease had expired; re-registering entries', {
          count: this.localSubscriptions.size,
        });
        await this.write([...this.localSubscriptions.values()]);
      }
      const now = clock.now();
      const expired = await command.zrangebyscore(keys.leases, '-inf', now, 'LIMIT', 0, REAP_BATCH);
      for (const node of expired) {
        // One call per node, its set declared (docs/hub.md, Lua key discipline).
        const claimed = await runScript<string[]>(
          command,
          this.options.reapScript,
          [
            keys.leases,
            keys.subscriptions,
            `${keys.reapClaimPrefix}${randomUUID()}`,
            `${keys.nodeSubscriptionsPrefix}${node}`,
          ],
          [node, now, REAP_CLAIM_TTL],
        );
        if (claimed.length > 0) {
          this.orphanHandler?.(claimed.map((text) => JSON.parse(text) as SubscriptionRecord));
        }
      }
    } catch (error) {
      if (!this.options.outages.down) {
        log('warn', 'subscription lease renewal failed', { error: loggableError(error) });
      }
    }
    this.scheduleLease(Math.max(250, Math.floor(lease / 3)));
  }

  /** Stops renewing; releases the lease and this node's entry set when Redis answers in time. */
  async stop(): Promise<void> {
    this.stopped = true;
    this.leaseTimer?.();
    const { command, keys, nodeId } = this.options;
    if (!this.started || command.status !== 'ready') return;
    await settleWithin(command.multi().zrem(keys.leases, nodeId).del(keys.nodeSubscriptions).exec(), 1000);
  }
}

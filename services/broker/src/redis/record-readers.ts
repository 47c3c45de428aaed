/*
 * Whether every broker node on this Redis reads message records (message-record.ts) and answer
 * records (the acks that released a lease, one field `*<p>` of la:<leaseId>: lua/includes/
 * lease-answers.lua; older than message records, so a node that reads these reads those). A node
 * of a release before them reads a record as an entry without fields, and would hand its consumer
 * an empty message, and answers a resent ack it cannot find as refused: while one is connected (a
 * rolling update, a rollback), pushes write the five fields instead and ack batches a field per
 * ack, which every release reads.
 *
 * Every node subscribes to the control channel; nodes that read records also to READERS beside
 * it. More subscribers on the control channel than on READERS: a node of an earlier release is
 * connected. Records are written again once none has been seen for `quietMs` (a node away for a
 * reconnect comes back), or at once when none was ever seen since this node started, and only on
 * a count that includes this node's own subscription (one that does not has nothing to go by). Asked
 * every `intervalMs`; until the first answer, and while Redis cannot answer, the last verdict
 * holds (five fields before the first).
 */
import { type Clock, type OutageLogger, type RedisClient, shardedSubscriberCounts } from '@herald/redis';
import { ReplyError } from 'ioredis';

export interface RecordReadersOptions {
  readonly redis: RedisClient;
  /** The control channel every broker node subscribes to. */
  readonly control: string;
  /** The channel only nodes that read records subscribe to, in the control channel's slot. */
  readonly channel: string;
  readonly clock: Clock;
  readonly log: OutageLogger;
  /** How often the subscribers are counted (ms). */
  readonly intervalMs?: number;
  /** How long no node of an earlier release must be seen before records are written again (ms). */
  readonly quietMs?: number;
}

const RECORD_READERS_INTERVAL_MS = 5000;
const RECORD_READERS_QUIET_MS = 30_000;

export class RecordReaders {
  readonly channel: string;
  private writeRecords = false;
  /** When a node of an earlier release was last seen (ms on the clock), -Infinity: never. */
  private olderSeenAt = Number.NEGATIVE_INFINITY;
  private cancel: (() => void) | undefined;
  private stopped = false;
  private readonly intervalMs: number;
  private readonly quietMs: number;
  /** The first count (or its failure) is over: a node reports ready after it. */
  private countedOnce = false;
  /** A refusal by Redis (not an outage) was logged: it is said once. */
  private refusalLogged = false;

  constructor(private readonly options: RecordReadersOptions) {
    this.channel = options.channel;
    this.intervalMs = options.intervalMs ?? RECORD_READERS_INTERVAL_MS;
    this.quietMs = options.quietMs ?? RECORD_READERS_QUIET_MS;
  }

  /**
   * Counts once `subscribed` settles (this node's own subscriptions to READERS, then the control
   * channel: counted before them, it would see itself as a node of an earlier release), then
   * every intervalMs.
   */
  start(subscribed: Promise<unknown>): void {
    void subscribed
      .catch(() => undefined)
      .then(() => this.check())
      .then(() => {
        this.countedOnce = true;
        this.schedule();
      });
  }

  /** Whether the first count is over (answered, or refused by a Redis away). */
  get counted(): boolean {
    return this.countedOnce;
  }

  /** True: pushes write records; false: the five fields (a node of an earlier release may read them). */
  get open(): boolean {
    return this.writeRecords;
  }

  /** Counts the subscribers now; returns the verdict. Redis away: the last verdict holds. */
  async check(): Promise<boolean> {
    let counts: number[];
    try {
      counts = await shardedSubscriberCounts(this.options.redis, [this.options.control, this.channel]);
    } catch (error) {
      // An outage has its own log lines (OutageLog). Redis refusing the command (an ACL without
      // PUBSUB) does not pass by itself: said once, with what pushes do meanwhile.
      if (error instanceof ReplyError && !this.refusalLogged) {
        this.refusalLogged = true;
        this.options.log.warn(
          {
            error: (error as Error).message,
            pushesWrite: this.writeRecords ? 'records' : 'five-field entries',
          },
          'message records: Redis refused to count the broker nodes (PUBSUB NUMSUB, on Cluster SHARDNUMSUB): allow it to this user; until a count is answered the last verdict holds',
        );
      }
      return this.writeRecords;
    }
    const [all = 0, readers = 0] = counts;
    const now = this.options.clock.now();
    const older = all - readers;
    if (older > 0) {
      this.olderSeenAt = now;
      if (this.writeRecords) {
        this.options.log.warn(
          { olderNodes: older },
          'message records: a broker node of an earlier release is connected; pushes write five-field entries',
        );
      }
      this.writeRecords = false;
    } else if (readers === 0) {
      // This node's own subscription is not in the count (a Cluster client that has not found
      // its nodes yet, a subscriber reconnecting): nothing to open on.
    } else if (!this.writeRecords && now - this.olderSeenAt >= this.quietMs) {
      if (this.olderSeenAt > Number.NEGATIVE_INFINITY) {
        this.options.log.info(
          {},
          'message records: every connected broker node reads them; pushes write records',
        );
      }
      this.writeRecords = true;
    }
    return this.writeRecords;
  }

  stop(): void {
    this.stopped = true;
    this.cancel?.();
  }

  private schedule(): void {
    if (this.stopped) return;
    this.cancel = this.options.clock.timer(this.options.clock.now() + this.intervalMs, () => {
      void this.check().then(() => this.schedule());
    });
  }
}

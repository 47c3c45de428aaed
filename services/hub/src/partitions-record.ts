import { type Clock, type RedisClient, systemClock } from '@herald/redis';
import type { TransportLog } from './transport.js';

/** How long the record outlives the last node that renewed it (ms). */
export const PARTITIONS_RECORD_TTL = 30_000;

/**
 * The deployment's MERCURE_PARTITIONS, recorded in Redis while its nodes run (docs/hub.md, "Topic
 * partitions"). Nodes with different N publish and listen on different partitions: a subscriber
 * on one would miss, without any error, what another publishes (a rolling update that changes N,
 * one node configured apart). Each node claims the record with its N (`SET NX` with a TTL) or
 * renews it when it holds the same N, at every check; a node whose N differs is not ready until
 * the record expires, i.e. until every node of the other N has stopped for PARTITIONS_RECORD_TTL.
 * Safe under retries: SET NX and PEXPIRE give the same result applied twice.
 */
export class PartitionsRecord {
  /** The readiness problem, undefined while this node's N is the recorded one. */
  problem: string | undefined = 'MERCURE_PARTITIONS not yet checked against the deployment (Redis)';
  /** Cancels the next check. */
  private timer: (() => void) | undefined;
  private stopped = false;
  private checked = false;

  constructor(
    private readonly redis: RedisClient,
    private readonly key: string,
    private readonly partitions: number,
    private readonly log: TransportLog,
    /** The checks' timer (the record's TTL is Redis's: PX). */
    private readonly clock: Clock = systemClock,
  ) {}

  /** Checks now and every `interval` ms of the clock until `stop` (not awaited: boot never waits on Redis here). */
  start(interval: number): void {
    void this.check();
    this.schedule(interval);
  }

  private schedule(interval: number): void {
    if (this.stopped) return;
    this.timer = this.clock.timer(this.clock.now() + interval, () => {
      this.schedule(interval);
      void this.check();
    });
  }

  stop(): void {
    this.stopped = true;
    this.timer?.();
  }

  /** One claim or renewal; a Redis error keeps the last verdict (the connections' readiness reports outages). */
  async check(): Promise<void> {
    const mine = String(this.partitions);
    let recorded: string | null;
    try {
      const claimed = await this.redis.set(this.key, mine, 'PX', PARTITIONS_RECORD_TTL, 'NX');
      recorded = claimed === 'OK' ? mine : await this.redis.get(this.key);
      if (recorded === mine && claimed !== 'OK') await this.redis.pexpire(this.key, PARTITIONS_RECORD_TTL);
    } catch {
      return;
    }
    // Expired between the SET and the GET: the next check claims it.
    if (recorded === null) return;
    const problem =
      recorded === mine
        ? undefined
        : `MERCURE_PARTITIONS=${mine} but the deployment's running nodes use ${recorded} (Redis key ${this.key}): ` +
          'nodes with different values miss each other’s updates. Change it on every node at once: stop them all, ' +
          `wait ${PARTITIONS_RECORD_TTL / 1000} s, start them with the new value (docs/hub.md, "Topic partitions")`;
    if (problem && problem !== this.problem) this.log('error', problem);
    if (!problem && this.problem && this.checked) {
      this.log('info', `MERCURE_PARTITIONS=${mine} is now the deployment's value`);
    }
    this.problem = problem;
    this.checked = true;
  }
}

import { performance } from 'node:perf_hooks';
import { type RedisClient, replyWithin } from '@herald/redis';

/** Bound on the TIME round trip that maps the node's clock onto Redis's. */
const CLOCK_TIMEOUT = 1000;

/**
 * Redis's clock seen from this node's monotonic clock, so the node can stamp a deadline that
 * Redis itself checks (a publish answered 503 must never run later: docs/hub.md). The offset is
 * a lower bound (`redisMs >= performance.now() + offset` for any later instant: the TIME reply
 * is taken as read at the end of the round trip), so a deadline computed with it never lands
 * after the node's own. Measured again after every reconnect (another Redis may answer).
 *
 * On Redis Cluster, TIME goes to one primary and each shard checks a deadline against its own
 * clock: the shards' clocks must agree (NTP) within the margin between the script budget and the
 * publish timeout (1 s), as the resume window already requires (docs/hub.md, Redis topologies).
 */
export class RedisClock {
  private offset: number | undefined;
  private measurement: Promise<number> | undefined;

  constructor(private readonly redis: RedisClient) {
    redis.on('close', () => {
      this.offset = undefined;
    });
    redis.on('ready', () => void this.measure().catch(() => undefined));
  }

  get known(): boolean {
    return this.offset !== undefined;
  }

  /** One TIME round trip at a time; resolves to the offset. */
  measure(): Promise<number> {
    this.measurement ??= (async () => {
      try {
        const [seconds, microseconds] = await replyWithin(this.redis.time(), CLOCK_TIMEOUT, 'TIME');
        const redisMs = Number(seconds) * 1000 + Math.floor(Number(microseconds) / 1000);
        // Read after the reply: Redis's clock was at least redisMs then (the 1 ms covers the two
        // clocks' rounding).
        this.offset = redisMs - performance.now() - 1;
        return this.offset;
      } finally {
        this.measurement = undefined;
      }
    })();
    return this.measurement;
  }

  /** Redis time (ms) `budgetMs` from now, or undefined when the clock is not known. */
  deadline(budgetMs: number): number | undefined {
    return this.offset === undefined ? undefined : Math.floor(performance.now() + this.offset + budgetMs);
  }
}

import { publishSharded, type RedisClient } from '@herald/redis';
import { newId } from '../identifiers.js';

/** How often a node checks that Redis still holds what it registered. */
const EPOCH_CHECK_MS = 2000;

/** Control-channel message telling every node that a queue was deleted. */
const FORGET_PREFIX = 'forget ';

/**
 * The global registrations of the Redis backend: the queue set (which the maintenance jobs
 * walk) and the partition-id index (acks and lookups by partition id). Each node writes a name
 * once and then trusts its memory, so it must notice when Redis lost what it wrote:
 *
 * - an `epoch` key, set once by whichever node finds it missing, marks the data set; a node
 *   that sees it missing or changed (restart without persistence, FLUSHALL, failover to an
 *   empty replica) writes every registration it remembers again, at once, so messages pushed
 *   before the loss was noticed are swept and counted too (docs/broker-operations.md, "Outages");
 * - a queue deleted on any node is forgotten by every node (control channel), so the next push
 *   registers it again.
 */
export class RedisRegistry {
  private readonly queues = new Set<string>();
  private readonly partitions = new Map<string, [string, string]>();
  private epoch: string | undefined;
  private readonly timer: NodeJS.Timeout;
  private checking: Promise<void> | undefined;

  constructor(
    private readonly redis: RedisClient,
    private readonly key: (...parts: string[]) => string,
  ) {
    this.timer = setInterval(() => void this.check(), EPOCH_CHECK_MS).unref();
    redis.on('ready', () => void this.check());
  }

  stop(): void {
    clearInterval(this.timer);
  }

  /** Writes the registrations of `queue` and its partitions this node has not written yet. */
  async register(queue: string, partitions: Iterable<[string, string]>): Promise<void> {
    const pending: Promise<unknown>[] = [];
    if (!this.queues.has(queue)) {
      pending.push(this.redis.sadd(this.key('queues'), queue).then(() => this.queues.add(queue)));
    }
    for (const [partition, partitionId] of partitions) {
      if (this.partitions.has(partitionId)) continue;
      pending.push(
        this.redis
          .hset(this.key('pid'), partitionId, JSON.stringify([queue, partition]))
          .then(() => this.partitions.set(partitionId, [queue, partition])),
      );
    }
    await Promise.all(pending);
  }

  /** Every registered queue, sorted (the set the maintenance jobs walk), read from Redis. */
  async queueNames(): Promise<string[]> {
    return (await this.redis.smembers(this.key('queues'))).sort();
  }

  /** The (queue, partition) a partition id names, from memory or from the index. */
  known(partitionId: string): [string, string] | undefined {
    return this.partitions.get(partitionId);
  }

  async resolve(partitionId: string): Promise<[string, string] | undefined> {
    const known = this.partitions.get(partitionId);
    if (known) return known;
    const raw = await this.redis.hget(this.key('pid'), partitionId);
    if (!raw) return undefined;
    const pair = JSON.parse(raw) as [string, string];
    this.partitions.set(partitionId, pair);
    return pair;
  }

  /** Removes a deleted queue from the registrations and tells every node to forget it. */
  async remove(queue: string, partitionIds: string[]): Promise<void> {
    await this.redis.srem(this.key('queues'), queue);
    if (partitionIds.length > 0) await this.redis.hdel(this.key('pid'), ...partitionIds);
    this.forget(queue);
    await publishSharded(this.redis, this.key('control'), FORGET_PREFIX + queue).catch(() => undefined);
  }

  /** Handles a control-channel message; true when it was the registry's. */
  onControl(message: string): boolean {
    if (!message.startsWith(FORGET_PREFIX)) return false;
    this.forget(message.slice(FORGET_PREFIX.length));
    return true;
  }

  private forget(queue: string): void {
    this.queues.delete(queue);
    for (const [id, [owner]] of this.partitions) if (owner === queue) this.partitions.delete(id);
  }

  /** Compares the data set's epoch with the one this node registered under (one at a time). */
  private check(): Promise<void> {
    this.checking ??= this.compareEpoch()
      .catch(() => undefined) // Redis away: the next check (or 'ready') tries again.
      .finally(() => {
        this.checking = undefined;
      });
    return this.checking;
  }

  private async compareEpoch(): Promise<void> {
    if (this.redis.status !== 'ready') return;
    const key = this.key('epoch');
    const candidate = newId();
    const current =
      (await this.redis.set(key, candidate, 'NX')) === 'OK' ? candidate : await this.redis.get(key);
    if (current === null || current === this.epoch) return;
    if (this.epoch !== undefined) await this.rewrite();
    this.epoch = current;
  }

  /** Writes again every registration this node remembers (Redis lost them). */
  private async rewrite(): Promise<void> {
    // Two commands, not one pipeline: on Redis Cluster the two keys live in different slots.
    const writes: Promise<unknown>[] = [];
    if (this.queues.size > 0) writes.push(this.redis.sadd(this.key('queues'), ...this.queues));
    const fields: string[] = [];
    for (const [id, pair] of this.partitions) fields.push(id, JSON.stringify(pair));
    if (fields.length > 0) writes.push(this.redis.hset(this.key('pid'), ...fields));
    await Promise.all(writes);
  }
}

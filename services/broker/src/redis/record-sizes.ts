import { publishSharded, type RedisClient } from '@herald/redis';

/**
 * Records from this size up are noted (a script argument of 1 MiB adds ~125 ms to the command
 * deadline at its 1 s default: smaller ones change nothing that matters).
 */
export const LARGE_RECORD_BYTES = 1024 * 1024;

/** Control-channel message: `sizes <bytes> <slot tag>` (0 bytes: the tag's queue was deleted). */
const SIZES_PREFIX = 'sizes ';

/** After a failed read of the marks, the next read waits this long (ms). */
const RETRY_MS = 1000;

/**
 * The largest message record each queue may hold, so that the command deadline allows for it
 * (docs/contracts.md, "Redis command deadline"). A script on a queue reads its entries whole: a
 * pop of one 240 MiB message takes Redis ~1.5 s, past the 1 s default, and a deadline that
 * refuses it every time leaves a message that was accepted and can never be delivered. The
 * deadline gives a command `timeoutMs` more per 8 MiB of its arguments; a script on a queue gets
 * the same for the largest record noted for the queue's slot tag (`@herald/redis` `commandExpecting`).
 *
 * - A node notes a record of LARGE_RECORD_BYTES or more before it writes it: `ZADD GT` on one
 *   global sorted set (member: the keys' slot tag, score: bytes; resend-safe, it only raises),
 *   then, when that raised it, a `sizes` message on the control channel, which every node
 *   applies to its copy. Both come before the write, so any node has the figure before the
 *   record is in the stream. Either failing fails the write (503, not applied).
 * - Each node reads the set at its start and again after its subscriber reconnects (messages
 *   may have been missed meanwhile), in the background: a script never waits for the read and
 *   uses the copy it has (empty until the first read, a few milliseconds after a node starts).
 *   So a script on any queue keeps working while the set's server is away (Redis Cluster: one
 *   shard of many); the read is tried again at most every second.
 * - A mark only rises (an upper bound: a queue that once held a large record keeps the longer
 *   deadline) until the queue is deleted, which removes it where the tag is the queue's alone.
 */
export class RecordSizes {
  private marks = new Map<string, number>();
  /** Read since the last forget(). */
  private fresh = false;
  private loading = false;
  /** Marks applied while a read was in flight, applied again to what it returns. */
  private updates: [string, number][] = [];
  /** Bumped by forget(): a read started before it is kept but not taken as fresh. */
  private generation = 0;
  private retryAt = 0;

  constructor(
    private readonly redis: RedisClient,
    private readonly key: string,
    private readonly controlChannel: string,
    /** A key's slot tag (the key itself when it has none). */
    private readonly slotTag: (key: string) => string,
  ) {
    this.refresh();
  }

  /**
   * The bytes a script on `keys` may read or answer on top of its arguments: the largest mark of
   * the keys' slot tags, after noting `largestArgument` (a record being written) when it is
   * large. A number unless a record is to be noted first.
   */
  allowance(keys: readonly string[], largestArgument: number): number | Promise<number> {
    if (!this.fresh) this.refresh();
    if (largestArgument >= LARGE_RECORD_BYTES) {
      return this.note(keys, largestArgument).then(() => this.largest(keys));
    }
    return this.marks.size === 0 ? 0 : this.largest(keys);
  }

  /** The largest mark of the keys' slot tags, from this node's copy (0: none known). */
  largest(keys: readonly string[]): number {
    let largest = 0;
    for (const key of keys) largest = Math.max(largest, this.marks.get(this.slotTag(key)) ?? 0);
    return largest;
  }

  /**
   * Raises the marks of the keys' slot tags to `bytes`. Keys without a tag are not queue keys
   * (the lease index): the tags are the queues' (or namespaces'), `txn` and `streams`.
   */
  private async note(keys: readonly string[], bytes: number): Promise<void> {
    const tags = new Set(keys.map(this.slotTag).filter((tag, index) => tag !== keys[index]));
    for (const tag of tags) {
      if ((this.marks.get(tag) ?? 0) >= bytes) continue;
      const raised = await this.redis.zadd(this.key, 'GT', 'CH', bytes, tag);
      this.apply(tag, bytes);
      if (raised > 0) await publishSharded(this.redis, this.controlChannel, `${SIZES_PREFIX}${bytes} ${tag}`);
    }
  }

  /** Removes the mark of a deleted queue's slot tag, on every node. */
  async remove(tag: string): Promise<void> {
    await this.redis.zrem(this.key, tag);
    this.apply(tag, 0);
    await publishSharded(this.redis, this.controlChannel, `${SIZES_PREFIX}0 ${tag}`).catch(() => undefined);
  }

  /** Handles a control-channel message; true when it was about record sizes. */
  onControl(message: string): boolean {
    if (!message.startsWith(SIZES_PREFIX)) return false;
    const space = message.indexOf(' ', SIZES_PREFIX.length);
    const bytes = Number(message.slice(SIZES_PREFIX.length, space));
    if (space > 0 && Number.isSafeInteger(bytes)) this.apply(message.slice(space + 1), bytes);
    return true;
  }

  /** Reads the set again (messages sent while this node's subscriber was away are lost). */
  forget(): void {
    this.generation += 1;
    this.fresh = false;
    this.retryAt = 0;
    this.refresh();
  }

  private apply(tag: string, bytes: number): void {
    applyMark(this.marks, tag, bytes);
    if (this.loading) this.updates.push([tag, bytes]);
  }

  /** Reads the set in the background, unless a read is in flight or failed less than RETRY_MS ago. */
  private refresh(): void {
    if (this.loading || Date.now() < this.retryAt) return;
    this.loading = true;
    const generation = this.generation;
    this.read().then(
      (marks) => {
        for (const [tag, bytes] of this.updates) applyMark(marks, tag, bytes);
        this.marks = marks;
        this.fresh = generation === this.generation;
        this.settle();
      },
      () => {
        // Redis (or the set's shard) away: scripts go on with the copy this node has.
        this.retryAt = Date.now() + RETRY_MS;
        this.settle();
      },
    );
  }

  private settle(): void {
    this.loading = false;
    this.updates = [];
  }

  private async read(): Promise<Map<string, number>> {
    const flat = await this.redis.zrange(this.key, 0, -1, 'WITHSCORES');
    const marks = new Map<string, number>();
    for (let index = 0; index + 1 < flat.length; index += 2) {
      marks.set(flat[index] as string, Number(flat[index + 1]));
    }
    return marks;
  }
}

function applyMark(marks: Map<string, number>, tag: string, bytes: number): void {
  if (bytes === 0) marks.delete(tag);
  else marks.set(tag, Math.max(bytes, marks.get(tag) ?? 0));
}

import { publishSharded, type RedisClient, subscribeSharded, unsubscribeSharded } from '@herald/redis';
import type { Availability, AvailabilityListener } from '../storage.js';

/*
 * Notifications: every node publishes "work may be available in <queue>" and parked pops
 * listen (long-poll.ts through the Availability role). On standalone Redis and Sentinel one
 * `notify` channel carries every queue (classic pub/sub reaches every node anyway). On Redis
 * Cluster each queue has its own sharded channel `<base>notify` in the queue's slot, so the
 * traffic spreads over the shards like the queues, and a node subscribes only to the queues it
 * has parked pops on (QueueSubscriptions; docs/broker-topologies.md "Redis topologies").
 */

/**
 * A notification: `<capacity> <queue>`, or `* <queue>` when every parked pop of the queue
 * should try (capacity unknown). See AvailabilityListener.
 */
function formatNotification(queue: string, capacity: number): string {
  return `${Number.isFinite(capacity) ? capacity : '*'} ${queue}`;
}

function parseNotification(message: string): [string, number] {
  const space = message.indexOf(' ');
  const count = message.slice(0, space);
  if (space > 0 && (count === '*' || /^\d+$/.test(count))) {
    return [message.slice(space + 1), count === '*' ? Number.POSITIVE_INFINITY : Number(count)];
  }
  // Not in this format (an older node): a bare queue name, wake every waiter.
  return [message, Number.POSITIVE_INFINITY];
}

/**
 * Publishes "work may be available" for each queue, with the number of pops per group it
 * can serve (a bare name: unknown, wake every waiter). Coalesced per event-loop turn: under
 * load many requests finish in one turn, and one PUBLISH per queue then covers them all.
 */
class Notifier {
  /** Notifications not yet published, queue → capacity. */
  private readonly pending = new Map<string, number>();
  private scheduled = false;

  constructor(
    private readonly redis: RedisClient,
    /** The channel of a queue's notifications. */
    private readonly channelOf: (queue: string) => string,
  ) {}

  notify(queues: Iterable<string | readonly [string, number]>): void {
    for (const entry of queues) {
      const [queue, capacity] = typeof entry === 'string' ? [entry, Number.POSITIVE_INFINITY] : entry;
      this.pending.set(queue, (this.pending.get(queue) ?? 0) + capacity);
    }
    if (this.scheduled || this.pending.size === 0) return;
    this.scheduled = true;
    setImmediate(() => {
      this.scheduled = false;
      for (const [queue, capacity] of this.pending) {
        void publishSharded(this.redis, this.channelOf(queue), formatNotification(queue, capacity)).catch(
          () => undefined,
        );
      }
      this.pending.clear();
    });
  }
}

/**
 * How long a queue's channel stays subscribed after its last parked pop left: a consumer that
 * polls in a loop parks again at once, and a subscription per pop would cost two round trips.
 */
export const UNWATCH_AFTER_MS = 60_000;

/**
 * The per-queue sharded channels this node subscribes to (Redis Cluster): one subscription per
 * queue with parked pops, kept UNWATCH_AFTER_MS after the last one leaves. When a subscription
 * takes effect (or fails), `subscribed(queue)` runs: the storage then wakes the queue's parked
 * pops once, so a push notified before the subscription existed is still found.
 */
class QueueSubscriptions {
  private readonly watched = new Map<string, { users: number; timer: NodeJS.Timeout | undefined }>();

  constructor(
    private readonly subscriber: RedisClient,
    private readonly channelOf: (queue: string) => string,
    private readonly subscribed: (queue: string) => void,
  ) {}

  watch(queue: string): () => void {
    let entry = this.watched.get(queue);
    if (!entry) {
      const created = { users: 0, timer: undefined };
      entry = created;
      this.watched.set(queue, created);
      void subscribeSharded(this.subscriber, this.channelOf(queue))
        .catch(() => {
          // Redis away: the next watch subscribes again; ioredis resubscribes what it holds.
          if (this.watched.get(queue) === created && created.users === 0) this.watched.delete(queue);
        })
        .finally(() => this.subscribed(queue));
    }
    if (entry.timer) clearTimeout(entry.timer);
    entry.timer = undefined;
    entry.users++;
    const held = entry;
    let released = false;
    return () => {
      if (released) return;
      released = true;
      held.users--;
      if (held.users > 0) return;
      held.timer = setTimeout(() => {
        if (this.watched.get(queue) !== held || held.users > 0) return;
        this.watched.delete(queue);
        void unsubscribeSharded(this.subscriber, this.channelOf(queue)).catch(() => undefined);
      }, UNWATCH_AFTER_MS).unref();
    };
  }

  /** Queues subscribed now (tests, metrics). */
  get size(): number {
    return this.watched.size;
  }

  close(): void {
    for (const entry of this.watched.values()) if (entry.timer) clearTimeout(entry.timer);
    this.watched.clear();
  }
}

/**
 * The Availability role on Redis: publishes through a Notifier, delivers what the subscriber
 * hears (storage-redis.ts passes this node's notification messages to `receive`) to the
 * listeners, and on Redis Cluster subscribes per queue while pops are parked there.
 */
export class Notifications implements Availability {
  private readonly listeners = new Set<AvailabilityListener>();
  private readonly notifier: Notifier;
  /** Per-queue notification channels this node listens to (Cluster only). */
  private readonly perQueue: QueueSubscriptions | undefined;

  constructor(
    redis: RedisClient,
    subscriber: RedisClient,
    /** One channel for every queue, or each queue's own channel (Redis Cluster). */
    channel: string | ((queue: string) => string),
  ) {
    if (typeof channel === 'string') {
      this.notifier = new Notifier(redis, () => channel);
      // Re-subscribed by ioredis after a reconnect (autoResubscribe).
      void subscribeSharded(subscriber, channel).catch(() => undefined);
    } else {
      this.notifier = new Notifier(redis, channel);
      this.perQueue = new QueueSubscriptions(subscriber, channel, (queue) =>
        this.deliver(queue, Number.POSITIVE_INFINITY),
      );
    }
  }

  /** "Work may be available" for these queues (names, or [queue, capacity] pairs), to every node. */
  notify(queues: Iterable<string | readonly [string, number]>): void {
    this.notifier.notify(queues);
  }

  /** A message heard on a notification channel. */
  receive(message: string): void {
    const [queue, capacity] = parseNotification(message);
    this.deliver(queue, capacity);
  }

  onAvailable(listener: AvailabilityListener): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  watchQueue(queue: string): () => void {
    return this.perQueue?.watch(queue) ?? (() => undefined);
  }

  close(): void {
    this.perQueue?.close();
  }

  private deliver(queue: string, capacity: number): void {
    for (const listener of this.listeners) listener(queue, capacity);
  }
}

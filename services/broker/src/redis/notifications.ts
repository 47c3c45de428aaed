import { publishSharded, type RedisClient } from '@herald/redis';

/*
 * The `notify` channel: every node publishes "work may be available in <queue>" and every
 * node's parked pops listen (long-poll.ts through BrokerStorage.onAvailable).
 */

/**
 * A notification: `<capacity> <queue>`, or `* <queue>` when every parked pop of the queue
 * should try (capacity unknown). See AvailabilityListener.
 */
function formatNotification(queue: string, capacity: number): string {
  return `${Number.isFinite(capacity) ? capacity : '*'} ${queue}`;
}

export function parseNotification(message: string): [string, number] {
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
export class Notifier {
  /** Notifications not yet published, queue → capacity. */
  private readonly pending = new Map<string, number>();
  private scheduled = false;

  constructor(
    private readonly redis: RedisClient,
    private readonly channel: string,
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
        void publishSharded(this.redis, this.channel, formatNotification(queue, capacity)).catch(
          () => undefined,
        );
      }
      this.pending.clear();
    });
  }
}

import type { Clock } from '@herald/redis';
import type { Availability } from './storage.js';

/** Why a parked pop resumed: a notification (it may have to pass the wake-up on) or anything else. */
export type WakeReason = 'notified' | 'other';

interface Waiter {
  /** Epoch of the notification this waiter last tried; a hand-off of that one (or older) skips it. */
  tried: number;
  resume(reason: WakeReason, epoch: number): void;
}

/**
 * Parked pops, woken by "work may be available in queue Q" notifications (Redis pub/sub
 * from any node; the embedded engine's pub/sub on a single node) and by the one time the storage
 * itself predicts (a lease expiry, a retry delay, a delayed message). Nothing polls Redis
 * at a fixed interval.
 *
 * No thundering herd: a notification carries how many pops it can serve at most (a push
 * makes each partition it wrote poppable by one consumer per group, so the count is the
 * number of partitions), and only that many waiters per (queue, group) wake, oldest first.
 * Every node does this, so a waiter on node B still wakes for a push on node A. A woken
 * waiter that finds nothing while the storage reports work ready now (it waits on another
 * partition, say) hands the wake-up to the next waiter of its group that has not tried for
 * this notification yet, so no wake-up is lost and none loops.
 */
export class LongPoll {
  /** queue → group → waiters in parking order (a Set iterates in insertion order). */
  private readonly waiters = new Map<string, Map<string, Set<Waiter>>>();
  /** Counts notifications (all queues): a waiter records the one it tried. */
  private epoch = 0;
  private readonly unsubscribe: () => void;
  /** Per queue with parked pops: ends the storage's delivery of its notifications here. */
  private readonly unwatch = new Map<string, () => void>();
  private parked = 0;
  private closed = false;

  constructor(
    private readonly availability: Availability,
    /** The storage's clock: deadlines and predicted wake-ups are times on it. */
    private readonly clock: Clock,
    private readonly onParkedChange: (parked: number) => void = () => undefined,
  ) {
    this.unsubscribe = availability.onAvailable((queue, capacity) => this.wake(queue, capacity));
  }

  /** True once the node is shutting down: parked pops answer instead of waiting. */
  get isClosed(): boolean {
    return this.closed;
  }

  get parkedCount(): number {
    return this.parked;
  }

  /** Wakes up to `capacity` waiters of each group of `queue` (Infinity: all of them). */
  private wake(queue: string, capacity: number): void {
    const groups = this.waiters.get(queue);
    const epoch = ++this.epoch;
    if (!groups) return;
    for (const set of [...groups.values()]) {
      let woken = 0;
      for (const waiter of [...set]) {
        if (woken >= capacity) break;
        waiter.resume('notified', epoch);
        woken++;
      }
    }
  }

  /**
   * Passes a notification on: a waiter woken by it found nothing it could take while work
   * is ready. Wakes the oldest waiter of the same group that has not tried in `epoch`.
   */
  handOff(queue: string, group: string, epoch: number): void {
    const set = this.waiters.get(queue)?.get(group);
    if (!set) return;
    for (const waiter of set) {
      if (waiter.tried >= epoch) continue;
      waiter.resume('notified', epoch);
      return;
    }
  }

  /** Wakes every parked pop (shutdown): each retries once and answers. */
  wakeAll(): void {
    for (const queue of [...this.waiters.keys()]) this.wake(queue, Number.POSITIVE_INFINITY);
  }

  /**
   * Resolves at the first of: a notification for `queue` that selects this waiter, `wakeAt`
   * (ms on the storage's clock, 0 = none), `deadline` (ms on that clock) or `signal` aborting. `tried` is the epoch of
   * the notification the caller last tried for (0 if none).
   */
  wait(
    queue: string,
    group: string,
    wakeAt: number,
    deadline: number,
    signal: AbortSignal,
    tried = 0,
  ): Promise<{ reason: WakeReason; epoch: number }> {
    return new Promise((resolve) => {
      if (signal.aborted || this.closed) return resolve({ reason: 'other', epoch: this.epoch });
      let groups = this.waiters.get(queue);
      if (!groups) {
        groups = new Map();
        this.waiters.set(queue, groups);
        // On Redis Cluster a queue's notifications reach only the nodes watching it.
        const unwatch = queue === '' ? undefined : this.availability.watchQueue(queue);
        if (unwatch) this.unwatch.set(queue, unwatch);
      }
      let set = groups.get(group);
      if (!set) {
        set = new Set();
        groups.set(group, set);
      }
      const until = wakeAt > 0 ? Math.min(wakeAt, deadline) : deadline;
      let done = false;
      const finish = (reason: WakeReason, epoch: number) => {
        if (done) return;
        done = true;
        cancelTimer();
        signal.removeEventListener('abort', onAbort);
        this.remove(queue, group, waiter);
        this.parked--;
        this.onParkedChange(this.parked);
        resolve({ reason, epoch });
      };
      const onOther = () => finish('other', this.epoch);
      const onAbort = onOther;
      const waiter: Waiter = { tried, resume: finish };
      const cancelTimer = this.clock.timer(until, onOther);
      signal.addEventListener('abort', onAbort, { once: true });
      set.add(waiter);
      this.parked++;
      this.onParkedChange(this.parked);
    });
  }

  private remove(queue: string, group: string, waiter: Waiter): void {
    const groups = this.waiters.get(queue);
    const set = groups?.get(group);
    if (!groups || !set) return;
    set.delete(waiter);
    if (set.size > 0) return;
    groups.delete(group);
    if (groups.size > 0) return;
    this.waiters.delete(queue);
    this.unwatch.get(queue)?.();
    this.unwatch.delete(queue);
  }

  close(): void {
    this.closed = true;
    this.unsubscribe();
    this.wakeAll();
  }
}

import type { BrokerStorage } from './storage.js';

/**
 * Parked pops, woken by "work may be available in queue Q" notifications (Redis pub/sub
 * from any node, or the in-process backend's own events) and by the one time the storage
 * itself predicts (a lease expiry, a retry delay, a delayed message). Nothing polls Redis
 * at a fixed interval.
 */
export class LongPoll {
  private readonly waiters = new Map<string, Set<() => void>>();
  private readonly unsubscribe: () => void;
  private parked = 0;
  private closed = false;

  constructor(
    storage: BrokerStorage,
    private readonly onParkedChange: (parked: number) => void = () => undefined,
  ) {
    this.unsubscribe = storage.onAvailable((queue) => this.wake(queue));
  }

  /** True once the node is shutting down: parked pops answer instead of waiting. */
  get isClosed(): boolean {
    return this.closed;
  }

  get parkedCount(): number {
    return this.parked;
  }

  private wake(queue: string): void {
    const set = this.waiters.get(queue);
    if (!set) return;
    this.waiters.delete(queue);
    for (const resume of set) resume();
  }

  /** Wakes every parked pop (shutdown): each retries once and answers. */
  wakeAll(): void {
    for (const queue of [...this.waiters.keys()]) this.wake(queue);
  }

  /**
   * Resolves at the first of: a notification for `queue`, `wakeAt` (ms epoch, 0 = none),
   * `deadline` (ms epoch) or `signal` aborting.
   */
  wait(queue: string, wakeAt: number, deadline: number, signal: AbortSignal): Promise<void> {
    return new Promise((resolve) => {
      if (signal.aborted || this.closed) return resolve();
      let set = this.waiters.get(queue);
      if (!set) {
        set = new Set();
        this.waiters.set(queue, set);
      }
      const until = wakeAt > 0 ? Math.min(wakeAt, deadline) : deadline;
      let done = false;
      const finish = () => {
        if (done) return;
        done = true;
        clearTimeout(timer);
        signal.removeEventListener('abort', finish);
        this.waiters.get(queue)?.delete(finish);
        this.parked--;
        this.onParkedChange(this.parked);
        resolve();
      };
      const timer = setTimeout(finish, Math.max(0, until - Date.now()));
      signal.addEventListener('abort', finish, { once: true });
      set.add(finish);
      this.parked++;
      this.onParkedChange(this.parked);
    });
  }

  close(): void {
    this.closed = true;
    this.unsubscribe();
    this.wakeAll();
  }
}

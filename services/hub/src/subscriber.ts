import type { ServerResponse } from 'node:http';
import type { Principal } from './authorization.js';
import { eventBytes, HEARTBEAT_COMMENT } from './sse.js';
import { comparePositions, type Position, type StoredUpdate } from './update.js';

/** A compiled topic matcher: one `match*` query parameter, or one claim entry. */
export interface TopicMatcher {
  /** Canonical name: `Exact`, `URLPattern`, `Regexp`, `URITemplate`. */
  readonly matchType: string;
  readonly match: string;
  matches(topic: string): boolean;
}

export type CloseReason =
  | 'client'
  | 'queue_full'
  | 'dispatch_timeout'
  | 'token_expired'
  | 'lifetime'
  | 'drain'
  | 'shutdown'
  | 'replay_failed';

export interface SubscriberLimits {
  readonly maxQueueBytes: number;
  readonly maxQueueEvents: number;
  readonly dispatchTimeout: number;
}

export interface SubscriberOptions {
  /** One IRI per connection (`urn:uuid:…`), the `subscriber` of subscription events. */
  readonly iri: string;
  readonly matchers: readonly TopicMatcher[];
  /** The verified token, undefined for an anonymous subscriber. */
  readonly principal: Principal | undefined;
  /** Decides delivery of private updates against the current token (auth.md, subscribers). */
  readonly canReceivePrivate: (topics: readonly string[]) => boolean;
  readonly response: ServerResponse;
  readonly limits: SubscriberLimits;
  readonly onClose: (subscriber: Subscriber, reason: CloseReason) => void;
}

/**
 * One SSE connection. Writes go straight to the socket while it accepts them; once `write()`
 * reports back-pressure, events queue here, bounded in bytes and in count, and a dispatch timer
 * starts: overflow or a write blocked past the timeout closes this connection, so a stalled
 * client never slows anyone else (hub.md, slow subscribers). Node keeps accepting writes after
 * `false`, so without this cap a non-reading client piles up megabytes.
 */
export class Subscriber {
  readonly iri: string;
  readonly matchers: readonly TopicMatcher[];
  readonly principal: Principal | undefined;
  private readonly response: ServerResponse;
  private readonly limits: SubscriberLimits;
  private readonly canReceivePrivate: (topics: readonly string[]) => boolean;
  private readonly onClose: SubscriberOptions['onClose'];
  private queue: Buffer[] = [];
  private queuedBytes = 0;
  private blocked = false;
  private dispatchTimer: NodeJS.Timeout | undefined;
  private readonly timers: NodeJS.Timeout[] = [];
  /** While replaying history, live updates wait here (they all come after the snapshot). */
  private replayBuffer: StoredUpdate[] | undefined;
  private snapshot: Position | undefined;
  /** Updates up to this position are already known to the client (its Last-Event-ID). */
  private skipPosition: Position | undefined;
  lastWriteAt = Date.now();
  closed = false;
  deliveries = 0;

  constructor(options: SubscriberOptions) {
    this.iri = options.iri;
    this.matchers = options.matchers;
    this.principal = options.principal;
    this.response = options.response;
    this.limits = options.limits;
    this.canReceivePrivate = options.canReceivePrivate;
    this.onClose = options.onClose;
    this.response.on('close', () => this.close('client'));
    this.response.on('drain', () => this.onDrain());
  }

  /** Whether some matcher of this subscription matches some topic of the update. */
  matchesTopics(topics: readonly string[]): boolean {
    for (const matcher of this.matchers) {
      for (const topic of topics) if (matcher.matches(topic)) return true;
    }
    return false;
  }

  /** Whether this subscriber may see the update (private updates: claims vs every topic). */
  isEntitledTo(update: StoredUpdate): boolean {
    return !update.private || this.canReceivePrivate(update.topics);
  }

  /** Starts buffering live updates; `position` is the last one the replay will cover. */
  beginReplay(position: Position): void {
    this.replayBuffer = [];
    this.snapshot = position;
  }

  /** Writes the buffered live updates after the replay and switches to direct delivery. */
  endReplay(): void {
    const buffered = this.replayBuffer ?? [];
    this.replayBuffer = undefined;
    for (const update of buffered) this.deliver(update);
  }

  /**
   * The client's cursor may be ahead of this node (it read it from a faster node): live updates
   * up to the cursor would be duplicates.
   */
  skipThrough(position: Position): void {
    if (this.snapshot !== undefined && comparePositions(position, this.snapshot) > 0)
      this.skipPosition = position;
  }

  get replaySnapshot(): Position | undefined {
    return this.snapshot;
  }

  /** Live delivery, called by the fan-out once matching and entitlement were checked. */
  deliver(update: StoredUpdate): void {
    if (this.closed) return;
    if (this.skipPosition !== undefined) {
      if (comparePositions(update.position, this.skipPosition) <= 0) return;
      this.skipPosition = undefined;
    }
    if (this.replayBuffer) {
      this.replayBuffer.push(update);
      if (this.replayBuffer.length > this.limits.maxQueueEvents) this.close('queue_full');
      return;
    }
    this.deliveries += 1;
    this.write(eventBytes(update));
  }

  /** A replayed event: matching and entitlement are checked here, against the current token. */
  replay(update: StoredUpdate): boolean {
    if (this.closed || !this.matchesTopics(update.topics) || !this.isEntitledTo(update)) return false;
    this.deliveries += 1;
    this.write(eventBytes(update));
    return true;
  }

  heartbeat(): void {
    if (!this.closed && !this.blocked) this.write(HEARTBEAT_COMMENT);
  }

  write(chunk: Buffer): void {
    if (this.closed) return;
    if (this.blocked) {
      this.queue.push(chunk);
      this.queuedBytes += chunk.length;
      if (this.queuedBytes > this.limits.maxQueueBytes || this.queue.length > this.limits.maxQueueEvents) {
        this.close('queue_full');
      }
      return;
    }
    this.lastWriteAt = Date.now();
    if (!this.response.write(chunk)) {
      this.blocked = true;
      this.dispatchTimer = setTimeout(() => this.close('dispatch_timeout'), this.limits.dispatchTimeout);
    }
  }

  private onDrain(): void {
    if (this.closed) return;
    clearTimeout(this.dispatchTimer);
    this.dispatchTimer = undefined;
    this.blocked = false;
    const queue = this.queue;
    this.queue = [];
    this.queuedBytes = 0;
    for (let index = 0; index < queue.length; index++) {
      if (this.blocked) {
        // Back-pressure again: keep the rest, in order.
        for (const chunk of queue.slice(index)) {
          this.queue.push(chunk);
          this.queuedBytes += chunk.length;
        }
        return;
      }
      this.write(queue[index] as Buffer);
    }
  }

  /** Closes after `milliseconds` (token expiry, maximum lifetime); 0 or less closes now. */
  closeAfter(milliseconds: number, reason: CloseReason): void {
    // setTimeout overflows above 2^31-1 ms (~24.8 days) and would fire at once.
    if (milliseconds > 2_147_483_647) return;
    const timer = setTimeout(() => this.close(reason), Math.max(0, milliseconds));
    this.timers.push(timer);
  }

  close(reason: CloseReason): void {
    if (this.closed) return;
    this.closed = true;
    clearTimeout(this.dispatchTimer);
    for (const timer of this.timers) clearTimeout(timer);
    this.queue = [];
    this.replayBuffer = undefined;
    if (reason === 'queue_full' || reason === 'dispatch_timeout') {
      // The peer is not reading: ending gracefully would wait on it forever.
      this.response.destroy();
    } else if (!this.response.writableEnded) {
      this.response.end();
    }
    this.onClose(this, reason);
  }
}

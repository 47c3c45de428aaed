import { randomUUID } from 'node:crypto';
import type { EventEmitter } from 'node:events';
import { loggableError, type OutageLog, type Redis, replyWithin } from '@herald/redis';
import type { RedisClock } from './redis-clock.js';
import type { TransportEvents, TransportLog, UpdateListener } from './transport.js';
import { decodeEntry, readEntries, readNewestEntry } from './transport-redis-history.js';
import {
  comparePositions,
  decodeUpdate,
  ORIGIN_POSITION,
  type Position,
  type StoredUpdate,
} from './update.js';

const PROBE_PREFIX = 'probe\n';
const HISTORY_PAGE = 1000;
/** Live messages held while a gap is being filled; beyond it the fill starts over. */
const RECOVERY_BUFFER_LIMIT = 100_000;
/** Bound on reading the history tail at start, while Redis may be unreachable. */
const TAIL_TIMEOUT = 2000;

export interface RedisFanoutOptions {
  /** The node's own subscriber connection (SUBSCRIBE mode). */
  readonly subscriber: Redis;
  /** Publishes the probes: the fail-fast publish connection, so a probe fails while it is down. */
  readonly publisher: Redis;
  /** Reads the history to fill gaps. */
  readonly command: Redis;
  readonly clock: RedisClock;
  readonly outages: OutageLog;
  readonly historyKey: string;
  readonly channel: string;
  readonly events: EventEmitter<TransportEvents>;
  readonly log: TransportLog;
  /** Interval between end-to-end pub/sub probes while healthy (default 5 s). */
  readonly probeInterval?: number;
  /** A probe not back within this bound marks the pub/sub path unverified (default 2 s). */
  readonly probeTimeout?: number;
}

/**
 * The receiving side of the Redis transport: one SUBSCRIBE per node, fanned out locally.
 *
 * Delivery invariant: the listener sees positions strictly increasing. After any (re)subscription
 * the node buffers live messages, verifies the path end to end with a probe, reads the history
 * after the last position it dispatched, then flushes the buffer; duplicates are dropped by
 * position. So a Redis restart or failover costs latency, never an update within the history bounds.
 */
export class RedisFanout {
  private listener: UpdateListener | undefined;
  private lastPosition: Position = ORIGIN_POSITION;
  private recovering = true;
  private recoveryBuffer: string[] = [];
  private recoveryBufferOverflowed = false;
  private needsGapFill = true;
  private verifiedPath = false;
  private subscriberReadyCount = 0;
  private readonly pendingProbes = new Map<string, () => void>();
  private probeTimer: NodeJS.Timeout | undefined;
  private probing = false;
  private firstVerification: (() => void) | undefined;
  private stopped = false;
  /** The history tail could not be read at start: the first recovery reads it instead of filling. */
  private baselineUnknown = false;

  constructor(private readonly options: RedisFanoutOptions) {}

  get lastDispatchedPosition(): Position {
    return this.lastPosition;
  }

  /** True while the last end-to-end probe came back in time. */
  get verified(): boolean {
    return this.verifiedPath;
  }

  /**
   * Subscribes and starts probing. `verified` settles once the pub/sub path is first verified
   * (wrapped: an async function would otherwise wait for it).
   */
  async start(listener: UpdateListener): Promise<{ readonly verified: Promise<void> }> {
    const { subscriber, command, historyKey, channel } = this.options;
    this.listener = listener;
    subscriber.on('ready', () => this.onSubscriptionEstablished());
    subscriber.on('close', () => this.onSubscriptionLost());
    subscriber.on('message', (_channel: string, message: string) => this.onMessage(message));
    // The baseline position is read before subscribing, so the first gap fill covers whatever is
    // published between this read and the subscription becoming active.
    const verified = new Promise<void>((resolve) => {
      this.firstVerification = resolve;
    });
    try {
      const newest = await replyWithin(readNewestEntry(command, historyKey), TAIL_TIMEOUT, 'XREVRANGE');
      if (newest) this.lastPosition = newest[0];
    } catch (error) {
      this.baselineUnknown = true;
      this.options.log('warn', 'could not read the history tail at start; Redis unreachable?', {
        err: loggableError(error),
      });
    }
    // Not awaited: while Redis is down the command waits in the offline queue, and the node must
    // still start (alive, not ready) and keep probing.
    subscriber.subscribe(channel).catch(() => undefined);
    if (subscriber.status === 'ready') this.scheduleProbe(0);
    return { verified };
  }

  private onSubscriptionLost(): void {
    if (this.stopped) return;
    this.recovering = true;
    this.needsGapFill = true;
    this.setVerified(false);
  }

  private onSubscriptionEstablished(): void {
    if (this.stopped) return;
    this.subscriberReadyCount += 1;
    if (this.subscriberReadyCount > 1) {
      this.options.events.emit('fanout-reconnected');
      this.options.log('warn', 'fan-out subscription re-established; filling the gap from history', {
        after: this.lastPosition,
      });
    }
    this.recovering = true;
    this.needsGapFill = true;
    this.setVerified(false);
    this.scheduleProbe(0);
  }

  private setVerified(verified: boolean): void {
    this.verifiedPath = verified;
    this.options.events.emit('fanout-verified', verified);
    if (verified && this.firstVerification) {
      this.firstVerification();
      this.firstVerification = undefined;
    }
  }

  private onMessage(message: string): void {
    if (message.startsWith(PROBE_PREFIX)) {
      this.pendingProbes.get(message.slice(PROBE_PREFIX.length))?.();
      return;
    }
    if (this.recovering) {
      if (this.recoveryBuffer.length >= RECOVERY_BUFFER_LIMIT) {
        this.recoveryBufferOverflowed = true;
        this.recoveryBuffer = [];
      }
      this.recoveryBuffer.push(message);
      return;
    }
    this.deliverMessage(message);
  }

  private deliverMessage(message: string): void {
    const newline = message.indexOf('\n');
    const position = message.slice(0, newline);
    if (comparePositions(position, this.lastPosition) <= 0) return;
    this.deliver(decodeUpdate(position, message.slice(newline + 1)));
  }

  private deliver(update: StoredUpdate): void {
    if (comparePositions(update.position, this.lastPosition) <= 0) return;
    this.lastPosition = update.position;
    this.listener?.(update);
  }

  private scheduleProbe(delay: number): void {
    if (this.stopped) return;
    clearTimeout(this.probeTimer);
    this.probeTimer = setTimeout(() => void this.runProbe(), delay);
  }

  /**
   * The node publishes a probe on its own fan-out channel and must receive it back: a connected
   * subscriber socket is not proof that messages flow (a failed-over primary may have no
   * subscription for us), so readiness rests on this round trip.
   */
  private async runProbe(): Promise<void> {
    if (this.probing || this.stopped) return;
    this.probing = true;
    let ok = false;
    try {
      ok = await this.probe();
      if (ok && this.needsGapFill) {
        await this.fillGap();
        this.needsGapFill = false;
      }
    } catch (error) {
      ok = false;
      // During an outage every probe fails: the outage's own line says it once.
      if (!this.options.outages.down)
        this.options.log('warn', 'pub/sub recovery failed; retrying', { err: loggableError(error) });
    } finally {
      this.probing = false;
    }
    if (!ok) {
      // Messages may have been lost silently: buffer live traffic until the next fill.
      this.recovering = true;
      this.needsGapFill = true;
    }
    this.setVerified(ok);
    const interval = this.options.probeInterval ?? 5000;
    this.scheduleProbe(ok ? interval : Math.min(500, interval));
  }

  private async probe(): Promise<boolean> {
    const { publisher, subscriber, clock, channel } = this.options;
    const nonce = randomUUID();
    const timeout = this.options.probeTimeout ?? 2000;
    const arrived = new Promise<void>((resolve) => this.pendingProbes.set(nonce, resolve));
    try {
      if (publisher.status !== 'ready' || subscriber.status !== 'ready') return false;
      await clock.measure();
      await replyWithin(publisher.publish(channel, PROBE_PREFIX + nonce), timeout, 'probe publish');
      await replyWithin(arrived, timeout, 'probe delivery');
      return true;
    } catch {
      return false;
    } finally {
      this.pendingProbes.delete(nonce);
    }
  }

  /** Reads history after the last dispatched position, then flushes the live buffer. */
  private async fillGap(): Promise<void> {
    const { command, historyKey } = this.options;
    if (this.baselineUnknown) {
      // Started while Redis was down: nothing was dispatched yet, so the baseline is the tail now,
      // not the whole history (which would flood early subscribers with old updates).
      this.recoveryBuffer = [];
      const newest = await readNewestEntry(command, historyKey);
      if (newest && comparePositions(newest[0], this.lastPosition) > 0) this.lastPosition = newest[0];
      this.baselineUnknown = false;
    }
    for (;;) {
      this.recoveryBuffer = [];
      this.recoveryBufferOverflowed = false;
      for (;;) {
        const page = await readEntries(command, historyKey, this.lastPosition, '+', HISTORY_PAGE);
        for (const entry of page) this.deliver(decodeEntry(entry));
        if (page.length < HISTORY_PAGE) break;
      }
      if (!this.recoveryBufferOverflowed) break;
    }
    const buffered = this.recoveryBuffer;
    this.recoveryBuffer = [];
    this.recovering = false;
    for (const message of buffered) this.deliverMessage(message);
  }

  /** Stops probing and delivering; the transport closes the connections. */
  stop(): void {
    this.stopped = true;
    clearTimeout(this.probeTimer);
    this.listener = undefined;
  }
}

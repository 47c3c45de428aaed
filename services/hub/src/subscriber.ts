import { randomUUID } from 'node:crypto';
import type { ServerResponse } from 'node:http';
import { constants, type Http2ServerResponse } from 'node:http2';
import type { Socket } from 'node:net';
import type { Clock } from '@herald/redis';
import { takesCopy } from './partitions.js';
import type { Principal } from './principal.js';
import {
  eventFrame,
  eventFrameWithTopics,
  type Frame,
  flat,
  formatEvent,
  frameOf,
  HEARTBEAT,
} from './sse.js';
import type { TopicMatcher } from './topic-matcher.js';
import { type Cursor, comparePositions, isCovered, type StoredUpdate } from './update.js';

export type CloseReason =
  | 'client'
  | 'queue_full'
  | 'dispatch_timeout'
  | 'token_expired'
  | 'lifetime'
  | 'drain'
  | 'shutdown'
  | 'replay_failed'
  /** A revocation now covers the token the stream was opened with (docs/security.md, "Revocation"). */
  | 'revoked';

export interface SubscriberLimits {
  readonly maxQueueBytes: number;
  readonly maxQueueEvents: number;
  readonly dispatchTimeout: number;
}

/**
 * What every subscriber of a node shares: one object per node, not one per connection (an idle
 * connection's heap is the hub's footprint; docs/benchmarks.md, "Idle subscribers").
 */
export interface SubscriberShared {
  readonly limits: SubscriberLimits;
  /** The node's clock: write times, the dispatch timer and `closeAt` run on it. */
  readonly clock: Clock;
  /** Decides delivery of private updates against a token's current claims (auth.md, subscribers). */
  canReceive(principal: Principal, topics: readonly string[]): boolean;
  onClose(subscriber: Subscriber, reason: CloseReason): void;
  /**
   * The stream's response closed (whoever ended it): what fastify's onResponse hook and its
   * "request completed" log would do at a request's end (subscribe.ts, `releaseRequest`).
   */
  onResponseClosed(subscriber: Subscriber, statusCode: number): void;
}

export interface SubscriberOptions {
  /** The connection's IRI, when given (tests); else a `urn:uuid:` made when first asked for. */
  readonly iri?: string;
  readonly matchers: readonly TopicMatcher[];
  /** The topic partitions it needs (undefined: all; docs/hub.md, topic partitions). */
  readonly partitions?: readonly number[] | undefined;
  /** The verified token, undefined for an anonymous subscriber (who receives no private update). */
  readonly principal: Principal | undefined;
  /**
   * Events carry `topics` fields (MERCURE_TOPICS_FIELD on, and the subscription uses `match*`):
   * every topic of a public update, the topics the token allows one by one of a private one, in
   * publication order.
   */
  readonly topicsField?: boolean;
  /** An HTTP/1.x response, or an HTTP/2 stream's (the h2c listener). */
  readonly response: ServerResponse | Http2ServerResponse;
  /** The request id of the subscribe, for the log line at the stream's end. */
  readonly requestId: string;
  /** When the subscribe request started, on `performance.now()`'s clock. */
  readonly openedAt: number;
  readonly shared: SubscriberShared;
}

/**
 * Sockets corked by writes of the current tick, uncorked together once it ends: every event a
 * subscriber gets from one batch of pub/sub messages leaves in one writev (what node:http does per
 * response with one nextTick each; here one nextTick serves all of them).
 */
let corked: Socket[] = [];

function uncorkAll(): void {
  const sockets = corked;
  corked = [];
  for (const socket of sockets) socket.uncork();
}

/** Where a stream's event bytes go: an HTTP/1.x socket, or an HTTP/2 stream's response. */
interface EventSink {
  write(chunk: Buffer): boolean;
}

function corkForTick(socket: Socket): void {
  if (socket.writableCorked) return;
  if (corked.length === 0) process.nextTick(uncorkAll);
  socket.cork();
  corked.push(socket);
}

/**
 * A blocked stream's held events. An idle stream has none: state a few streams need lives in
 * objects made on need, not in fields every `Subscriber` carries (8 bytes each, per idle
 * subscriber; docs/benchmarks.md, "Idle subscribers").
 */
interface Backlog {
  readonly chunks: Buffer[];
  bytes: number;
  /** Cancels the dispatch timer, started when the write blocked. */
  readonly cancelTimer: () => void;
}

/** What a stream resumed from a Last-Event-ID keeps about its replay. */
interface Resume {
  /** While replaying history, live updates wait here (they all come after the snapshot). */
  buffer: StoredUpdate[] | undefined;
  /** The last position the replay covers in each partition. */
  snapshot: Cursor | undefined;
  /** Updates this cursor covers are already known to the client (its Last-Event-ID). */
  skipCursor: Cursor | undefined;
  /**
   * The client's Last-Event-ID: never sent again, replayed or live (a resume across partitions
   * starts before it, and a partition joined for this subscriber delivers from its join point, a
   * lower bound of Redis time that may precede it).
   */
  skipId: string | undefined;
}

/**
 * One SSE connection. Writes go straight to the socket while it accepts them; once `write()`
 * reports back-pressure, events queue here, bounded in bytes and in count, and a dispatch timer
 * starts: overflow or a write blocked past the timeout closes this connection, so a stalled
 * client never slows anyone else (hub.md, slow subscribers). Node keeps accepting writes after
 * `false`, so without this cap a non-reading client piles up megabytes.
 */
export class Subscriber {
  private iriText: string | undefined;
  readonly matchers: readonly TopicMatcher[];
  readonly partitions: readonly number[] | undefined;
  readonly principal: Principal | undefined;
  readonly requestId: string;
  readonly openedAt: number;
  private readonly response: ServerResponse | Http2ServerResponse;
  private readonly shared: SubscriberShared;
  private readonly topicsField: boolean;
  /**
   * Set once the headers are out: events then go straight to the socket, pre-framed (HTTP/1.x), or
   * to the HTTP/2 stream, which frames them itself.
   */
  private sink: EventSink | undefined;
  private chunked = false;
  /** Events held while a write is blocked by back-pressure (allocated then only). */
  private backlog: Backlog | undefined;
  /** Cancel the `closeAt` timers (allocated with the first). */
  private timers: (() => void)[] | undefined;
  /** A resumed stream's replay and skip state (allocated for a resume only). */
  private resume: Resume | undefined;
  lastWriteAt: number;
  closed = false;

  /**
   * One IRI per connection (`urn:uuid:…`), the `subscriber` of subscription events and of log
   * lines. Made when first asked for: an idle stream of a hub without subscription events never
   * needs it (64 bytes of heap per idle subscriber, docs/benchmarks.md).
   */
  get iri(): string {
    this.iriText ??= flat(`urn:uuid:${randomUUID()}`);
    return this.iriText;
  }

  private get clock(): Clock {
    return this.shared.clock;
  }

  constructor(options: SubscriberOptions) {
    this.iriText = options.iri;
    this.matchers = options.matchers;
    this.partitions = options.partitions;
    this.principal = options.principal;
    this.response = options.response;
    this.requestId = options.requestId;
    this.openedAt = options.openedAt;
    this.shared = options.shared;
    this.lastWriteAt = options.shared.clock.now();
    this.topicsField = options.topicsField ?? false;
    // The stream's one close listener (each listener is a closure and a context: heap per idle
    // subscriber, docs/benchmarks.md, "Idle subscribers").
    this.response.on('close', () => {
      this.close('client');
      this.shared.onResponseClosed(this, this.response.statusCode);
    });
  }

  /** Whether some matcher of this subscription matches some topic of the update. */
  matchesTopics(topics: readonly string[]): boolean {
    for (const topic of topics) if (this.matchesTopic(topic)) return true;
    return false;
  }

  matchesTopic(topic: string): boolean {
    for (const matcher of this.matchers) if (matcher.matches(topic)) return true;
    return false;
  }

  /** Of an update's copies in several partitions, this subscriber takes one (partitions.ts). */
  takesCopy(update: StoredUpdate): boolean {
    return takesCopy(update, (topic) => this.matchesTopic(topic));
  }

  private canReceivePrivate(topics: readonly string[]): boolean {
    return this.principal ? this.shared.canReceive(this.principal, topics) : false;
  }

  /**
   * Whether this subscriber may see the update (private updates: claims vs every topic). Verified
   * tokens share one claims object per token, so `decisions` (one map per update) lets the fan-out
   * decide once per distinct token rather than once per connection.
   */
  isEntitledTo(update: StoredUpdate, decisions?: Map<object | undefined, boolean>): boolean {
    if (!update.private) return true;
    if (!decisions) return this.canReceivePrivate(update.topics);
    const key = this.principal?.claims;
    let allowed = decisions.get(key);
    if (allowed === undefined) {
      allowed = this.canReceivePrivate(update.topics);
      decisions.set(key, allowed);
    }
    return allowed;
  }

  /** Starts buffering live updates; `snapshot` is the last the replay will cover in each partition. */
  beginReplay(snapshot: Cursor): void {
    this.resume = { buffer: [], snapshot, skipCursor: undefined, skipId: undefined };
  }

  /** Writes the buffered live updates after the replay and switches to direct delivery. */
  endReplay(): void {
    const resume = this.resume;
    const buffered = resume?.buffer ?? [];
    if (resume) resume.buffer = undefined;
    for (const update of buffered) this.deliver(update);
  }

  /**
   * The client's cursor may be ahead of this node (it read it from a faster node): live updates
   * up to the cursor would be duplicates. `id` (its Last-Event-ID) is not sent again.
   */
  skipThrough(cursor: Cursor, id: string): void {
    this.resume ??= { buffer: undefined, snapshot: undefined, skipCursor: undefined, skipId: undefined };
    this.resume.skipId = id;
    const snapshot = this.resume.snapshot;
    if (snapshot === undefined) return;
    const ahead = cursor.some(
      (position, partition) =>
        snapshot[partition] !== undefined && comparePositions(position, snapshot[partition] as string) > 0,
    );
    if (ahead) this.resume.skipCursor = cursor;
  }

  get replaySnapshot(): Cursor | undefined {
    return this.resume?.snapshot;
  }

  /** Live delivery, called by the fan-out once matching and entitlement were checked. */
  deliver(update: StoredUpdate): void {
    if (this.closed) return;
    const resume = this.resume;
    if (resume) {
      if (update.id === resume.skipId) return;
      if (resume.skipCursor !== undefined && isCovered(resume.skipCursor, update)) return;
      if (resume.buffer) {
        resume.buffer.push(update);
        if (resume.buffer.length > this.shared.limits.maxQueueEvents) this.close('queue_full');
        return;
      }
    }
    this.write(this.frameOf(update));
  }

  /** The bytes of an update for this subscriber: shared by all, but a private update's topics. */
  private frameOf(update: StoredUpdate): Frame {
    if (!this.topicsField) return eventFrame(update);
    if (!update.private) return eventFrameWithTopics(update);
    const disclosed = update.topics.filter((topic) => this.canReceivePrivate([topic]));
    return frameOf(formatEvent(update, disclosed));
  }

  /** A replayed event: matching and entitlement are checked here, against the current token. */
  replay(update: StoredUpdate): boolean {
    if (this.closed || update.id === this.resume?.skipId || !this.matchesTopics(update.topics)) return false;
    if (!this.takesCopy(update) || !this.isEntitledTo(update)) return false;
    this.write(this.frameOf(update));
    return true;
  }

  /** A write is blocked by back-pressure: the dispatch timer runs until the socket drains. */
  get writeBlocked(): boolean {
    return this.backlog !== undefined;
  }

  heartbeat(): void {
    // Not before the stream's headers: the subscribe handler may still be reading history, and
    // may yet answer 503 (a write now would send an implicit 200 instead).
    if (!this.closed && !this.backlog && this.response.headersSent) this.write(HEARTBEAT);
  }

  write(frame: Frame): void {
    if (this.closed) return;
    if (!this.sink && !this.attachSink()) {
      // node:http still holds output of its own: Node 22 and later keep a response's headers and
      // first writes until the end of the tick (a replay from the in-process history runs within
      // it). Through the response, this frame follows them in order.
      this.lastWriteAt = this.clock.now();
      (this.response as EventSink).write(frame.raw);
      return;
    }
    this.writeChunk(this.chunked ? frame.chunked : frame.raw);
  }

  private writeChunk(chunk: Buffer): void {
    const backlog = this.backlog;
    if (backlog) {
      backlog.chunks.push(chunk);
      backlog.bytes += chunk.length;
      const { limits } = this.shared;
      if (backlog.bytes > limits.maxQueueBytes || backlog.chunks.length > limits.maxQueueEvents) {
        this.close('queue_full');
      }
      return;
    }
    this.lastWriteAt = this.clock.now();
    const sink = this.sink as EventSink;
    // An HTTP/2 session sends what its streams wrote in a tick together already.
    if (sink !== this.response) corkForTick(sink as Socket);
    if (!sink.write(chunk)) {
      this.backlog = {
        chunks: [],
        bytes: 0,
        cancelTimer: this.clock.timer(this.clock.now() + this.shared.limits.dispatchTimeout, () =>
          this.close('dispatch_timeout'),
        ),
      };
    }
  }

  /**
   * Switches to direct socket writes once node:http has handed the headers (and the opening
   * comment) to the socket, framing chunks ourselves exactly as node would (`chunkedEncoding` is
   * false for HTTP/1.0 peers). `headersSent` alone is not enough: the response may still buffer
   * them, and bytes written to the socket would overtake them. An HTTP/2 stream's socket is its
   * session's, shared by every stream: the events go to the stream, once its headers are out.
   */
  private attachSink(): boolean {
    const response = this.response;
    if (!response.headersSent) return false;
    if ('stream' in response) {
      this.sink = response;
      response.on('drain', () => this.onDrain());
      return true;
    }
    const socket = response.socket;
    if (!socket || response.writableLength !== socket.writableLength) return false;
    this.sink = socket;
    this.chunked = response.chunkedEncoding;
    socket.on('drain', () => this.onDrain());
    return true;
  }

  private onDrain(): void {
    const backlog = this.backlog;
    if (this.closed || !backlog) return;
    backlog.cancelTimer();
    this.backlog = undefined;
    // Back-pressure again on the way: the rest joins the new backlog, in order.
    for (const chunk of backlog.chunks) {
      if (this.closed) return;
      this.writeChunk(chunk);
    }
  }

  /**
   * Closes when the node's clock reaches `at` (ms since the epoch: token expiry, maximum
   * lifetime); at once (on a later turn) when it already has.
   */
  closeAt(at: number, reason: CloseReason): void {
    // The system clock's setTimeout overflows above 2^31-1 ms (~24.8 days) and would fire at once.
    if (at - this.clock.now() > 2_147_483_647) return;
    this.timers ??= [];
    this.timers.push(this.clock.timer(at, () => this.close(reason)));
  }

  close(reason: CloseReason): void {
    if (this.closed) return;
    this.closed = true;
    this.backlog?.cancelTimer();
    this.backlog = undefined;
    for (const cancel of this.timers ?? []) cancel();
    if (this.resume) this.resume.buffer = undefined;
    if (reason === 'queue_full' || reason === 'dispatch_timeout') {
      // The peer is not reading: ending gracefully would wait on it forever. An HTTP/2 stream is
      // reset with CANCEL: a plain destroy resets it with NO_ERROR, which after a partial response
      // can read as a complete one (RFC 9113 §8.1).
      if ('stream' in this.response) this.response.stream.close(constants.NGHTTP2_CANCEL);
      else this.response.destroy();
    } else if (!this.response.writableEnded) {
      this.response.end();
    }
    this.shared.onClose(this, reason);
  }
}

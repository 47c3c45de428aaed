/*
 * A node's budget of large request bodies in flight (docs/security.md, "Broker limits"). A body
 * costs the node 7–8× its size while it is parsed, validated and stored, so concurrent large
 * pushes took a node far past its memory limit: eight pushes of 16 MiB at once peaked at 940 MB
 * (the chart's pods have 512 MiB). Bodies of more than LARGE_BODY_BYTES (by Content-Length)
 * share BROKER_BODY_BUDGET_BYTES: one that does not fit waits, unread (node stops reading a
 * request whose stream is full: the rest waits in the kernel and the client's socket), in
 * arrival order, at most BROKER_BODY_BUDGET_WAIT; then it is answered 503 with Retry-After, which
 * Queen's clients retry. A body larger than the whole budget goes when no other large body is in
 * flight. Smaller bodies are not counted: they are the common case, and cost little each.
 *
 * A pop's answer costs the same way (the script's reply, the records read from it, the body
 * text): a pop on a queue that holds records of more than LARGE_BODY_BYTES (their sizes are
 * noted as they are written, redis/record-sizes.ts) holds the budget for what its answer may
 * take (popAnswerBytes) from before it pops until its answer is sent, and answers 503 when it
 * found no room within its wait, nothing leased.
 */
import type { Clock } from '@herald/redis';
import type { FastifyInstance } from 'fastify';
import { busy } from './errors.js';

/** Bodies up to this size are not counted (and never wait). */
export const LARGE_BODY_BYTES = 1024 * 1024;

/** Records one pop answers at most (bytes; the first message always goes): lua/pop-1.lua's POP_BYTES. */
export const POP_BYTES = 16 * 1024 * 1024;

/**
 * The bytes a pop of `batch` messages may answer from a queue whose largest record is
 * `largestRecord`: 0 where no record passes LARGE_BODY_BYTES; else `batch` of the largest, at
 * most POP_BYTES unless one record is larger (it then comes alone).
 */
export function popAnswerBytes(largestRecord: number, batch: number): number {
  if (largestRecord <= LARGE_BODY_BYTES) return 0;
  return Math.min(Math.max(POP_BYTES, largestRecord), batch * largestRecord);
}

interface Waiter {
  readonly bytes: number;
  readonly admit: () => void;
}

/** What one large request holds: give it back once, whether it was admitted yet or not. */
export interface BodyTicket {
  /** Resolves true when the body may be read, false when its wait ran out. */
  readonly admitted: Promise<boolean>;
  /** Gives the bytes back (admitted), or leaves the queue (waiting). Idempotent. */
  release(): void;
}

export class BodyBudget {
  private inFlight = 0;
  private readonly queue: Waiter[] = [];

  constructor(
    /** Bytes of large bodies in flight at once (one larger body goes alone). */
    readonly bytes: number,
    /** How long a body waits for room before its 503 (ms). */
    readonly waitMs: number,
    private readonly clock: Clock,
    /** Called after every change of the bytes in flight or of the queue (metrics). */
    private readonly observe: (budget: BodyBudget) => void = () => undefined,
  ) {}

  /** Bytes of admitted large bodies not yet released. */
  get bytesInFlight(): number {
    return this.inFlight;
  }

  /** Bodies waiting for room. */
  get waiting(): number {
    return this.queue.length;
  }

  /** Asks room for a body of `bytes`: at once when nobody waits and it fits, else in arrival order. */
  request(bytes: number): BodyTicket {
    let state: 'waiting' | 'admitted' | 'done' = 'waiting';
    let cancelTimer: () => void = () => undefined;
    let settle: (admitted: boolean) => void = () => undefined;
    const admitted = new Promise<boolean>((resolve) => {
      settle = resolve;
    });
    const waiter: Waiter = {
      bytes,
      admit: () => {
        state = 'admitted';
        cancelTimer();
        this.take(bytes);
        settle(true);
      },
    };
    const leave = () => {
      const index = this.queue.indexOf(waiter);
      if (index >= 0) this.queue.splice(index, 1);
      cancelTimer();
      this.observe(this);
      // The head leaving may let the next ones in.
      this.admitWaiting();
    };
    if (this.queue.length === 0 && this.fits(bytes)) {
      waiter.admit();
    } else {
      this.queue.push(waiter);
      this.observe(this);
      cancelTimer = this.clock.timer(this.clock.now() + this.waitMs, () => {
        if (state !== 'waiting') return;
        state = 'done';
        leave();
        settle(false);
      });
    }
    return {
      admitted,
      release: () => {
        const was = state;
        state = 'done';
        if (was === 'admitted') {
          this.take(-bytes);
          this.admitWaiting();
        } else if (was === 'waiting') {
          leave();
          settle(false);
        }
      },
    };
  }

  private fits(bytes: number): boolean {
    return this.inFlight === 0 || this.inFlight + bytes <= this.bytes;
  }

  private take(bytes: number): void {
    this.inFlight += bytes;
    this.observe(this);
  }

  private admitWaiting(): void {
    for (let head = this.queue[0]; head && this.fits(head.bytes); head = this.queue[0]) {
      this.queue.shift();
      head.admit();
    }
  }
}

/**
 * The bytes a request's body will hold the budget for: 0 for no body, a small one, or one the
 * body limit refuses anyway (413 at once); the body limit, at most the whole budget, for a body
 * of unknown length (chunked: it then goes alone among large ones).
 */
export function largeBodyBytes(
  headers: { 'content-length'?: string | undefined; 'transfer-encoding'?: string | undefined },
  bodyLimit: number,
  budget: number,
): number {
  const length = headers['content-length'];
  if (length === undefined) {
    return headers['transfer-encoding'] === undefined ? 0 : Math.min(bodyLimit, budget);
  }
  const bytes = Number(length);
  if (!Number.isSafeInteger(bytes) || bytes <= LARGE_BODY_BYTES || bytes > bodyLimit) return 0;
  return bytes;
}

/** Holds every large body to the budget before fastify reads it; the answer gives the room back. */
export function installBodyBudget(
  app: FastifyInstance,
  budget: BodyBudget,
  bodyLimit: number,
  onRefused: () => void = () => undefined,
): void {
  // Callback-style: an async hook costs a promise and a microtask turn on every request (issue #14).
  app.addHook('onRequest', (request, reply, done) => {
    const bytes = largeBodyBytes(request.headers, bodyLimit, budget.bytes);
    if (bytes === 0) {
      done();
      return;
    }
    const ticket = budget.request(bytes);
    // 'close' comes once the answer is sent, or when the client goes away while the body waits.
    reply.raw.once('close', () => ticket.release());
    ticket.admitted.then((admitted) => {
      if (admitted) {
        done();
        return;
      }
      onRefused();
      done(busy(budget.bytes, budget.waitMs));
    });
  });
}

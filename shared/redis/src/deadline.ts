import { HeraldError } from '@herald/errors';
import { Cluster, Command as IoredisCommand, type Redis } from 'ioredis';
import type { RedisClient } from './client.js';

type Command = Parameters<Redis['sendCommand']>[0];
type Stream = Parameters<Redis['sendCommand']>[1];

/**
 * Why Redis could not serve a command: the connection is down, no reply came within the
 * deadline, Redis answered that it cannot serve now (still loading its data, a replica), or
 * that it is full (`OOM`: used memory above `maxmemory` with the `noeviction` policy).
 */
export type RedisUnavailableReason = 'disconnected' | 'timeout' | 'not-serving' | 'full';

/**
 * "Redis could not serve this; it was not done, retry later": a command refused by the fail-fast
 * mode of `createRedis({ commandTimeout })` (never written to Redis after the refusal, see
 * `applyDeadlines` for the exact guarantee), or any failure `asRedisUnavailable` recognises. An
 * edge answers it 503. Its message names the Redis address: for logs, never for a client
 * (`expose` is false).
 */
export class RedisUnavailableError extends HeraldError {
  override readonly name = 'RedisUnavailableError';
  override readonly code = 'HERALD_REDIS_UNAVAILABLE';
  constructor(
    readonly reason: RedisUnavailableReason,
    message: string,
    options: { readonly cause?: unknown } = {},
  ) {
    super('HERALD_REDIS_UNAVAILABLE', 503, message, { ...options, expose: false });
  }
}

/** The part of a command queue entry (ioredis `CommandItem`) the sweep reads. */
interface QueuedItem {
  readonly command: Command;
  readonly stream?: Stream;
}

/** ioredis' FIFO queues (denque): `commandQueue` is public, the other two are not typed. */
interface Queue {
  readonly length: number;
  peekAt(index: number): QueuedItem | undefined;
}

interface Queues {
  readonly commandQueue: Queue;
  readonly offlineQueue?: Queue;
  readonly prevCommandQueue?: Queue | null;
}

/**
 * The key a deadline and a refusal belong to: the command, or for a pipeline or MULTI its
 * stream, shared by all its commands. ioredis writes a pipeline in one buffer once all its
 * commands passed `sendCommand`, so they must be sent, refused or dropped together: dropping
 * some would leave the buffer unwritten while the others wait for replies that belong to
 * later commands.
 */
function keyOf(command: Command, stream: Stream | undefined): object {
  return stream && typeof stream === 'object' && 'isPipeline' in stream && stream.isPipeline
    ? stream
    : command;
}

/**
 * Fail-fast mode for data-plane connections (a request waits on the reply, and must get a
 * prompt "unavailable" instead of hanging through a Redis outage and landing later):
 *
 * - While the connection is lost (from its 'close' until it is 'ready' again, a handshake in
 *   progress excepted), a new command is refused at once: it never enters the offline queue.
 * - Any other command (queued during the first connect or a handshake, written and not yet
 *   answered, or waiting to be re-sent) is refused once `timeoutMs` passed without a reply,
 *   plus `timeoutMs` per 8 MiB of arguments it carries and of reply its caller expects
 *   (allowanceMs, expectReply), checked every
 *   `timeoutMs / 4` (100 ms at most), after the replies already received are read: refused
 *   within 1.25 x `timeoutMs` after that.
 * - A refused command is never written afterwards: ioredis re-sends unanswered commands and
 *   flushes its offline queue through `sendCommand` once reconnected, and this wrapper drops
 *   refused ones there. Unanswered commands that are still within their deadline are re-sent
 *   (their request still waits), which is why state-changing scripts must be idempotent per
 *   request (docs/broker-operations.md, "Outages").
 * - Not guaranteed: a command already WRITTEN before its deadline passed may still run in Redis
 *   (Redis stalled rather than died, or died after executing it but before replying). The
 *   caller saw an error, so the outcome is unknown to it; a retry is safe because of the
 *   idempotency rule above.
 *
 * One periodic sweep over ioredis' own queues, not a timer per command: the queues hold exactly
 * the unanswered commands, and nothing here keeps an answered one (or its payload) alive.
 *
 * On a Cluster the same holds per node connection (each one the Cluster opens is wrapped as it
 * appears, sharing one deadline per command, so a command redirected to another node keeps its
 * first deadline), and the Cluster's own entry point tracks each command until it settles: a
 * command waiting in the Cluster's offline queue or between redirection retries (a failover in
 * progress, CLUSTERDOWN) is refused by the same deadline, and never written afterwards.
 */
export function applyDeadlines(client: RedisClient, timeoutMs: number, target: string): void {
  const state: DeadlineState = {
    timeoutMs,
    target,
    firstSent: new WeakMap(),
    sized: new WeakSet(),
    allowed: new WeakMap(),
    refused: new WeakMap(),
  };
  if (client instanceof Cluster) {
    applyClusterDeadlines(client, state);
  } else {
    applyConnectionDeadlines(client, state);
  }
}

/** Shared by every connection of one client: a command's first send and its refusal. */
interface DeadlineState {
  readonly timeoutMs: number;
  readonly target: string;
  /** When the deadline's count starts: the first send, later by the size allowance. */
  readonly firstSent: WeakMap<object, number>;
  /** Commands whose size allowance is counted (only those that have one). */
  readonly sized: WeakSet<Command>;
  /** The size allowances counted per deadline key (ms), for the refusal's message. */
  readonly allowed: WeakMap<object, number>;
  readonly refused: WeakMap<object, RedisUnavailableError>;
}

/**
 * A command gets `timeoutMs` more per ALLOWANCE_BYTES of arguments it carries. Redis's time for
 * a large argument grows with it (one push of a 64 MiB payload: 1.34 s inside Redis here, ~21 ms
 * per MiB, past the broker's 1 s default), and a deadline chosen to notice a stalled Redis must
 * not refuse a command only for its size: ~6x that rate at the broker's default. The same holds
 * for what a command reads: a script that reads a 240 MiB entry and answers it takes ~1.5 s in
 * Redis here (~6 ms per MiB), a plain XRANGE of it ~0.6 s.
 */
const ALLOWANCE_BYTES = 8 * 1024 * 1024;

/** Bytes a command's caller expects Redis to read or answer on top of its arguments (expectReply). */
const expectedReplies = new WeakMap<Command, number>();

/**
 * Gives `command` the size allowance of `bytes` more (the caller knows that its work or its reply
 * in Redis may span that much: a script on a queue holding large messages). Call it before the
 * command is sent.
 */
function expectReply(command: Command, bytes: number): void {
  if (bytes > 0) expectedReplies.set(command, bytes);
}

/** A command (its reply as text) whose deadline allows for `replyBytes` more (expectReply). */
export function commandExpecting(
  name: string,
  args: readonly (string | number | Buffer)[],
  replyBytes: number,
): Command {
  const command = new IoredisCommand(name, args as (string | number | Buffer)[], { replyEncoding: 'utf8' });
  expectReply(command, replyBytes);
  return command;
}

function allowanceMs(command: Command, timeoutMs: number): number {
  let bytes = expectedReplies.get(command) ?? 0;
  for (const argument of command.args) {
    if (typeof argument === 'string' || Buffer.isBuffer(argument)) bytes += argument.length;
  }
  return bytes < ALLOWANCE_BYTES / 64 ? 0 : Math.ceil((timeoutMs * bytes) / ALLOWANCE_BYTES);
}

/**
 * Notes a send: the first starts the deadline's count (moved later by the command's size
 * allowance); a pipeline's later commands add their allowance once each; re-sends change nothing.
 */
function noteSent(state: DeadlineState, key: object, command: Command): void {
  const extra = allowanceMs(command, state.timeoutMs);
  const first = state.firstSent.get(key);
  if (extra > 0) {
    if (state.sized.has(command)) return;
    state.sized.add(command);
    state.allowed.set(key, (state.allowed.get(key) ?? 0) + extra);
  }
  if (first === undefined) state.firstSent.set(key, Date.now() + extra);
  else if (extra > 0) state.firstSent.set(key, first + extra);
}

/** The refusal of the command(s) under `key`, naming the time they had, their size allowance included. */
function timeoutRefusal(state: DeadlineState, key: object): RedisUnavailableError {
  const allowedMs = state.timeoutMs + (state.allowed.get(key) ?? 0);
  return new RedisUnavailableError(
    'timeout',
    `no reply from Redis at ${state.target} within ${allowedMs} ms`,
  );
}

function lostRefusal(state: DeadlineState, lostAt: number): RedisUnavailableError {
  const seconds = ((Date.now() - lostAt) / 1000).toFixed(1);
  return new RedisUnavailableError(
    'disconnected',
    `Redis at ${state.target} unreachable (connection lost ${seconds} s ago)`,
  );
}

/** A sweep every `timeoutMs / 4` (100 ms at most) while `sweep` reports pending commands. */
function sweeper(timeoutMs: number, sweep: (now: number) => number): () => void {
  let timer: NodeJS.Timeout | undefined;
  // Timers run before the event loop reads its sockets: after a stall (CPU starvation, a long
  // GC pause) the sweep would refuse commands whose replies are already waiting to be read.
  // setImmediate runs it after this turn's reads, so only replies that truly did not come count.
  const sweepAfterReads = () =>
    setImmediate(() => {
      if (sweep(Date.now()) === 0) {
        clearInterval(timer);
        timer = undefined;
      }
    });
  return () => {
    if (timer) return;
    timer = setInterval(sweepAfterReads, Math.min(100, Math.max(1, Math.floor(timeoutMs / 4))));
    timer.unref();
  };
}

function applyConnectionDeadlines(redis: Redis, state: DeadlineState): void {
  const { timeoutMs, firstSent, refused } = state;
  const send = redis.sendCommand.bind(redis);
  const queues = redis as unknown as Queues;
  let lostAt: number | undefined;
  redis.on('close', () => {
    lostAt ??= Date.now();
  });
  redis.on('ready', () => {
    lostAt = undefined;
  });

  const sweepQueue = (queue: Queue | null | undefined, now: number): number => {
    if (!queue) return 0;
    for (let index = 0; index < queue.length; index++) {
      const item = queue.peekAt(index);
      if (!item) continue;
      const key = keyOf(item.command, item.stream);
      let refusal = refused.get(key);
      if (!refusal && (firstSent.get(key) ?? now) <= now - timeoutMs) {
        refusal = timeoutRefusal(state, key);
        refused.set(key, refusal);
      }
      // Rejecting twice is harmless: a promise settles once.
      if (refusal) item.command.reject(refusal);
    }
    return queue.length;
  };
  const startSweeper = sweeper(
    timeoutMs,
    (now) =>
      sweepQueue(queues.commandQueue, now) +
      sweepQueue(queues.offlineQueue, now) +
      sweepQueue(queues.prevCommandQueue, now),
  );

  redis.sendCommand = ((command: Command, stream?: Stream) => {
    const key = keyOf(command, stream);
    const refusal = refused.get(key);
    if (refusal) {
      // Refused earlier (this is ioredis re-sending or flushing it), or a sibling in a pipeline
      // being refused: the command is not written.
      command.reject(refusal);
      return command.promise;
    }
    if (lostAt !== undefined && redis.status !== 'ready' && redis.status !== 'connect') {
      const error = lostRefusal(state, lostAt);
      refused.set(key, error);
      command.reject(error);
      return command.promise;
    }
    // The deadline counts from the first attempt, not from a re-send.
    noteSent(state, key, command);
    startSweeper();
    return send(command, stream);
  }) as typeof redis.sendCommand;
}

type ClusterSend = (command: Command, stream?: Stream, node?: unknown) => Promise<unknown>;

function applyClusterDeadlines(cluster: Cluster, state: DeadlineState): void {
  const { timeoutMs, firstSent, refused } = state;
  cluster.on('+node', (redis: Redis) => applyConnectionDeadlines(redis, state));
  const send = (cluster.sendCommand as ClusterSend).bind(cluster);
  // Commands from their first send until they settle, by deadline key (a pipeline's together).
  const pending = new Map<object, Set<Command>>();
  let lostAt: number | undefined;
  cluster.on('close', () => {
    lostAt ??= Date.now();
  });
  cluster.on('ready', () => {
    lostAt = undefined;
  });

  const startSweeper = sweeper(timeoutMs, (now) => {
    for (const [key, commands] of pending) {
      if ((firstSent.get(key) ?? now) > now - timeoutMs) continue;
      let refusal = refused.get(key);
      if (!refusal) {
        refusal = timeoutRefusal(state, key);
        refused.set(key, refusal);
      }
      for (const command of commands) command.reject(refusal);
    }
    return pending.size;
  });

  const track = (key: object, command: Command) => {
    let commands = pending.get(key);
    if (!commands) {
      commands = new Set();
      pending.set(key, commands);
    }
    if (commands.has(command)) return;
    commands.add(command);
    const settled = () => {
      commands.delete(command);
      if (commands.size === 0 && pending.get(key) === commands) pending.delete(key);
    };
    command.promise.then(settled, settled);
  };

  (cluster as { sendCommand: ClusterSend }).sendCommand = (command, stream, node) => {
    const key = keyOf(command, stream);
    const refusal = refused.get(key);
    if (refusal) {
      command.reject(refusal);
      return command.promise;
    }
    if (lostAt !== undefined && cluster.status !== 'ready' && cluster.status !== 'connect') {
      const error = lostRefusal(state, lostAt);
      refused.set(key, error);
      command.reject(error);
      return command.promise;
    }
    noteSent(state, key, command);
    track(key, command);
    startSweeper();
    return send(command, stream, node);
  };
}

import type { Redis } from 'ioredis';

type Command = Parameters<Redis['sendCommand']>[0];
type Stream = Parameters<Redis['sendCommand']>[1];

/** Why a command was refused: the connection is down, or no reply came within the deadline. */
export type RedisUnavailableReason = 'disconnected' | 'timeout';

/**
 * A command refused by the fail-fast mode of `createRedis({ commandTimeout })`. Such a command
 * is never written to Redis after the refusal (see `applyDeadlines` for the exact guarantee),
 * so an edge may answer "not done, retry" (a 503).
 */
export class RedisUnavailableError extends Error {
  override readonly name = 'RedisUnavailableError';
  readonly code = 'HERALD_REDIS_UNAVAILABLE';
  constructor(
    readonly reason: RedisUnavailableReason,
    message: string,
  ) {
    super(message);
  }
}

/**
 * The commands that share one deadline: a command sent alone, or every command of one pipeline
 * or MULTI. ioredis writes a pipeline in one buffer once all its commands passed `sendCommand`,
 * so its commands must be sent, refused or dropped together: dropping some would leave the
 * buffer unwritten while the others wait for replies that belong to later commands.
 */
interface Group {
  refusal: RedisUnavailableError | undefined;
  readonly members: Set<Command>;
  unsettled: number;
  timer: NodeJS.Timeout | undefined;
}

function pipelineOf(stream: Stream): object | undefined {
  return stream && typeof stream === 'object' && 'isPipeline' in stream && stream.isPipeline
    ? stream
    : undefined;
}

/**
 * Fail-fast mode for data-plane connections (a request waits on the reply, and must get a
 * prompt "unavailable" instead of hanging through a Redis outage and landing later):
 *
 * - While the connection is lost (from its 'close' until it is 'ready' again, a handshake in
 *   progress excepted), a new command is refused at once: it never enters the offline queue.
 * - Any other command (queued during the first connect or a handshake, or written and not yet
 *   answered) is refused when `timeoutMs` pass without a reply.
 * - A refused command is never written afterwards: ioredis re-sends unanswered commands and
 *   flushes its offline queue through `sendCommand` once reconnected, and this wrapper drops
 *   refused ones there. Unanswered commands that are still within their deadline are re-sent
 *   (their request still waits), which is why state-changing scripts must be idempotent per
 *   request (docs/broker.md, "Outages").
 * - Not guaranteed: a command already WRITTEN before its deadline passed may still run in Redis
 *   (Redis stalled rather than died, or died after executing it but before replying). The
 *   caller saw an error, so the outcome is unknown to it; a retry is safe because of the
 *   idempotency rule above.
 */
export function applyDeadlines(redis: Redis, timeoutMs: number, target: string): void {
  const send = redis.sendCommand.bind(redis);
  /** Keyed by the command, or by the pipeline's stream for a pipeline's commands. */
  const groups = new WeakMap<object, Group>();
  let lostAt: number | undefined;
  redis.on('close', () => {
    lostAt ??= Date.now();
  });
  redis.on('ready', () => {
    lostAt = undefined;
  });

  const refuse = (group: Group, refusal: RedisUnavailableError) => {
    group.refusal = refusal;
    clearTimeout(group.timer);
    for (const member of group.members) member.reject(refusal);
  };

  const join = (group: Group, command: Command) => {
    if (group.members.has(command)) return;
    group.members.add(command);
    group.unsettled += 1;
    const settled = () => {
      group.unsettled -= 1;
      if (group.unsettled === 0) clearTimeout(group.timer);
    };
    command.promise.then(settled, settled);
  };

  redis.sendCommand = ((command: Command, stream?: Stream) => {
    const key = pipelineOf(stream) ?? command;
    let group = groups.get(key);
    if (!group) {
      group = { refusal: undefined, members: new Set(), unsettled: 0, timer: undefined };
      groups.set(key, group);
      const created = group;
      created.timer = setTimeout(
        () =>
          refuse(
            created,
            new RedisUnavailableError('timeout', `no reply from Redis at ${target} within ${timeoutMs} ms`),
          ),
        timeoutMs,
      );
      created.timer.unref();
    }
    join(group, command);
    if (group.refusal) {
      // Refused earlier (this is ioredis re-sending or flushing it), or a sibling of a pipeline
      // being refused: the command is not written.
      command.reject(group.refusal);
      return command.promise;
    }
    if (lostAt !== undefined && redis.status !== 'ready' && redis.status !== 'connect') {
      const seconds = ((Date.now() - lostAt) / 1000).toFixed(1);
      refuse(
        group,
        new RedisUnavailableError(
          'disconnected',
          `Redis at ${target} unreachable (connection lost ${seconds} s ago)`,
        ),
      );
      return command.promise;
    }
    return send(command, stream);
  }) as typeof redis.sendCommand;
}

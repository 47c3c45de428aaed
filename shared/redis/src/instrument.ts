import type { Redis } from 'ioredis';
import type { Histogram } from 'prom-client';

/**
 * Times every command sent on a connection into `herald_redis_command_duration_seconds{command}`
 * (docs/contracts.md). Wraps `sendCommand`, the one funnel of ioredis, so pipelines and scripts
 * are counted too; label values are command names only (bounded cardinality).
 */
export function instrumentRedis(redis: Redis, histogram: Histogram<'command'>): void {
  const send = redis.sendCommand.bind(redis);
  // A command queued while offline passes through sendCommand again when the queue is flushed.
  const timed = new WeakSet<object>();
  redis.sendCommand = ((command, stream) => {
    if (timed.has(command)) return send(command, stream);
    timed.add(command);
    const stop = histogram.startTimer({ command: command.name.toLowerCase() });
    command.promise.then(
      () => stop(),
      () => stop(),
    );
    return send(command, stream);
  }) as typeof redis.sendCommand;
}

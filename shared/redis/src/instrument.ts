import type { Histogram } from 'prom-client';
import type { RedisClient } from './connection.js';

/**
 * Times every command sent on a connection into `herald_redis_command_duration_seconds{command}`
 * (docs/contracts.md). Wraps `sendCommand`, the one funnel of ioredis, so pipelines and scripts
 * are counted too; label values are command names only (bounded cardinality).
 */
export function instrumentRedis(redis: RedisClient, histogram: Histogram<'command'>): void {
  // Cluster's sendCommand takes a third argument (the target node of a pipeline): passed on as is.
  type Send = (command: Parameters<RedisClient['sendCommand']>[0], ...rest: unknown[]) => Promise<unknown>;
  const send = (redis.sendCommand as Send).bind(redis);
  // A command queued while offline passes through sendCommand again when the queue is flushed.
  const timed = new WeakSet<object>();
  (redis as { sendCommand: Send }).sendCommand = (command, ...rest) => {
    if (timed.has(command)) return send(command, ...rest);
    timed.add(command);
    const stop = histogram.startTimer({ command: command.name.toLowerCase() });
    command.promise.then(
      () => stop(),
      () => stop(),
    );
    return send(command, ...rest);
  };
}

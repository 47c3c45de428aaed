/*
 * The embedded default (no Redis configured): the Redis backend's own code and Lua scripts,
 * run on an in-process Redis (@herald/embedded-redis) reached over a private Unix socket. One
 * node; nothing survives a restart. No queue rule lives here or in the engine: the rules are
 * the scripts of lua/, the one text both backends execute (docs/architecture.md, "One text
 * for the queue rules").
 */
import type { LimitKind } from '@herald/limits';
import type { Histogram } from '@herald/metrics';
import type { Clock, OutageLogger } from '@herald/redis';
import { RedisStorage } from './storage-redis.js';

export interface EmbeddedStorageOptions {
  readonly prefix: string;
  readonly log: OutageLogger;
  readonly commandDuration?: Histogram<'command'>;
  /** The engine's clock (TIME, expiry, stream ids) and the node code's: one time for both. */
  readonly clock?: Clock;
  /** Each limit's default for every tenant (BROKER_LIMIT_*); absent: off. */
  readonly limits?: Partial<Record<LimitKind, number>>;
}

export async function startEmbeddedStorage(options: EmbeddedStorageOptions): Promise<RedisStorage> {
  // Loaded here, not at the top: a node on Redis never loads the engine and its Lua VM.
  const { EmbeddedRedis } = await import('@herald/embedded-redis');
  const engine = await EmbeddedRedis.start(options.clock ? { clock: options.clock } : {});
  return new RedisStorage({
    topology: { kind: 'standalone', url: engine.path },
    prefix: options.prefix,
    log: options.log,
    kind: 'memory',
    owns: engine,
    ...(options.commandDuration ? { commandDuration: options.commandDuration } : {}),
    ...(options.limits ? { limits: options.limits } : {}),
    ...(options.clock ? { clock: options.clock } : {}),
  });
}

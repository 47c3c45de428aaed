import { publishSharded, type RedisClient } from '@herald/redis';
import type { FlagStore, SystemFlags } from '../storage.js';

/**
 * The system flags (maintenance modes) in one global hash, cached by each node until a
 * `control` message or a reconnect says they may have changed (storage-redis.ts).
 */
export class RedisFlags implements FlagStore {
  private cache: SystemFlags | undefined;

  constructor(
    private readonly redis: RedisClient,
    private readonly key: string,
    private readonly controlChannel: string,
  ) {}

  /** Reads the flags afresh next time. */
  forget(): void {
    this.cache = undefined;
  }

  async get(): Promise<SystemFlags> {
    if (this.cache) return this.cache;
    const hash = await this.redis.hgetall(this.key);
    const flags = {
      maintenanceMode: hash.maintenanceMode === 'true',
      popMaintenanceMode: hash.popMaintenanceMode === 'true',
    };
    this.cache = flags;
    return flags;
  }

  async set(flags: Partial<SystemFlags>): Promise<SystemFlags> {
    const fields: string[] = [];
    for (const [name, value] of Object.entries(flags)) fields.push(name, String(value));
    if (fields.length > 0) await this.redis.hset(this.key, ...fields);
    this.cache = undefined;
    await publishSharded(this.redis, this.controlChannel, 'flags');
    return this.get();
  }
}

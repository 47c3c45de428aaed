/*
 * Queues on Redis (the QueueCatalog role): configure (the `cfg` hash, lua/configure-1.lua),
 * listing, lookup and lua/delete-queue-1.lua.
 */
import type { RedisClient } from '@herald/redis';
import { namespaceAndTask } from '../identifiers.js';
import { DEFAULT_QUEUE_OPTIONS, type QueueCatalog, type QueueInfo, type QueueOptions } from '../storage.js';
import { type RedisBackend, slotTag } from './context.js';

function parseOptions(hash: Record<string, string>): QueueOptions {
  const options = { ...DEFAULT_QUEUE_OPTIONS } as Record<string, number | boolean | string>;
  for (const [name, fallback] of Object.entries(DEFAULT_QUEUE_OPTIONS)) {
    const raw = hash[name];
    if (raw === undefined) continue;
    options[name] =
      typeof fallback === 'boolean' ? raw === 'true' : typeof fallback === 'string' ? raw : Number(raw);
  }
  return options as unknown as QueueOptions;
}

/**
 * Makes every partition of a queue due for retention now: after configure, the new options
 * apply to messages already stored (push and ack only schedule what they touch).
 * Resend-safe: ZADD of the same members.
 */
async function scheduleAllPartitions(redis: RedisClient, base: string, now: number): Promise<void> {
  const partitions = await redis.hkeys(`${base}parts`);
  for (let start = 0; start < partitions.length; start += 1000) {
    const chunk = partitions.slice(start, start + 1000);
    await redis.zadd(`${base}trim`, ...chunk.flatMap((partition) => [now, partition]));
  }
}

export class RedisCatalog implements QueueCatalog {
  constructor(private readonly backend: RedisBackend) {}

  async configure(
    queue: string,
    options: Partial<QueueOptions>,
    names: { namespace: string; task: string },
  ): Promise<QueueInfo> {
    const { backend } = this;
    const base = backend.base(queue);
    const fields: string[] = ['namespace', names.namespace, 'task', names.task];
    for (const [name, value] of Object.entries(options)) fields.push(name, String(value));
    const now = backend.clock.now();
    // Listed before the option is written: the relays look at every queue that may be bridged.
    if (options.bridgeTopic) await backend.redis.sadd(backend.outbox.bridgedKey, queue);
    await backend.run('configure', [base], [now, ...fields]);
    if (options.bridgeTopic === '') await backend.redis.srem(backend.outbox.bridgedKey, queue);
    await scheduleAllPartitions(backend.redis, base, now);
    await backend.registry.register(queue, []);
    return (await this.get(queue)) as QueueInfo;
  }

  async list(): Promise<QueueInfo[]> {
    const queues = await Promise.all(
      (await this.backend.registry.queueNames()).map((queue) => this.get(queue)),
    );
    return queues.filter((queue): queue is QueueInfo => queue !== undefined);
  }

  async get(queue: string): Promise<QueueInfo | undefined> {
    const { backend } = this;
    const base = backend.base(queue);
    const [config, partitions] = await Promise.all([
      backend.redis.hgetall(`${base}cfg`),
      backend.redis.hlen(`${base}parts`),
    ]);
    if (!config.createdAt) return undefined;
    const names = namespaceAndTask(queue);
    return {
      name: queue,
      namespace: config.namespace || names.namespace,
      task: config.task || names.task,
      createdAt: new Date(Number(config.createdAt)).toISOString(),
      options: parseOptions(config),
      partitions,
    };
  }

  async delete(queue: string): Promise<boolean> {
    const { backend } = this;
    const base = backend.base(queue);
    const exists = await backend.redis.exists(`${base}cfg`);
    // Read first as well: a resent script (its first reply lost) returns no ids, and the first
    // run's would stay in the global index.
    const known = await backend.redis.hvals(`${base}parts`);
    const ids = [...new Set([...known, ...(await backend.run<string[]>('delete-queue', [base], []))])];
    await backend.registry.remove(queue, ids);
    await backend.redis.hdel(backend.key('stats'), queue);
    // Intents recorded before the delete are still relayed (their events happened): the outbox
    // stays, listed for the relays while it holds any.
    if ((await backend.redis.xlen(`${base}ob`)) > 0) await backend.outbox.mark(queue, backend.clock.now());
    // Not while those intents (records among them) stay, nor where the tag is the namespace's.
    else if (backend.slotGroup === 'queue') await backend.recordSizes.remove(slotTag(base));
    await backend.redis.srem(backend.outbox.bridgedKey, queue);
    return exists === 1;
  }
}

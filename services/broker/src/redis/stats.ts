/*
 * Queue statistics on the Redis backend: lua/stats-1.lua per queue, the snapshot kept in one
 * global hash (`stats`) that every node's /metrics reads.
 */
import { namespaceAndTask } from '../identifiers.js';
import type { QueueStats } from '../storage.js';
import { decode, type RedisBackend } from './context.js';

/** Ready partitions sampled per group for the oldest pending age (lua/stats-1.lua ARGV[2]). */
const STATS_SAMPLE = 50;

export async function refreshStats(backend: RedisBackend): Promise<QueueStats[]> {
  const snapshot: QueueStats[] = [];
  for (const queue of await backend.registry.queueNames()) {
    const base = backend.base(queue);
    const [pushed, retained, dlq, expiries, partitions, oldest, leases, groups, now] = await backend.run<
      [number, number, number, number, number, string, number, [string, number, number][], string]
    >('stats', [`${base}cfg`], [base, STATS_SAMPLE]);
    const names = namespaceAndTask(queue);
    const groupStats = groups.map(([group, resolved, backlog]) => ({
      group: decode(group),
      resolved: Number(resolved),
      lag: Math.max(0, Number(backlog)),
    }));
    const pending = groupStats.length === 0 ? Number(retained) : Math.max(...groupStats.map((g) => g.lag));
    const oldestMs = Number(oldest);
    snapshot.push({
      queue,
      namespace: names.namespace,
      task: names.task,
      partitions: Number(partitions),
      pushed: Number(pushed),
      retained: Number(retained),
      pending,
      oldestPendingAgeSeconds:
        oldestMs === 0 || pending === 0 ? 0 : Math.max(0, (Number(now) - oldestMs) / 1000),
      deadLetters: Number(dlq),
      leaseExpiries: Number(expiries),
      activeLeases: Number(leases),
      groups: groupStats,
      at: Number(now),
    });
  }
  const statsKey = backend.key('stats');
  const pipeline = backend.redis.multi().del(statsKey);
  for (const entry of snapshot) pipeline.hset(statsKey, entry.queue, JSON.stringify(entry));
  await pipeline.exec();
  return snapshot;
}

/** The last snapshot any node wrote (cheap: what /metrics reads). */
export async function cachedStats(backend: RedisBackend): Promise<QueueStats[]> {
  const hash = await backend.redis.hgetall(backend.key('stats'));
  return Object.values(hash).map((text) => JSON.parse(text) as QueueStats);
}

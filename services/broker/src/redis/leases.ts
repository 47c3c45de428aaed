/*
 * Leases on the Redis backend: lua/extend-lease-1.lua (found through the global lease index
 * pop.ts writes) and lua/sweep-leases-1.lua (expiry: a lease expiry is an attempt).
 */
import type { LeaseExtension, LeaseSweep } from '../storage.js';
import type { RedisBackend } from './context.js';

export async function extendLease(
  backend: RedisBackend,
  leaseId: string,
  seconds: number,
): Promise<LeaseExtension> {
  const queue = await backend.redis.get(backend.key('lease', leaseId));
  if (!queue) return { leaseId, success: false, error: 'Lease not found', expiresAt: null };
  const base = backend.base(queue);
  const [ok, value] = await backend.run<[number, string]>('extend-lease', [base], [leaseId, seconds]);
  if (ok !== 1) return { leaseId, success: false, error: value, expiresAt: null };
  const expiresAt = Number(value);
  await backend.redis.pexpireat(backend.key('lease', leaseId), expiresAt + 60_000);
  return { leaseId, success: true, error: null, expiresAt: new Date(expiresAt).toISOString() };
}

/** Expires every lease past its time, queue by queue (maintenance; a pop also expires the ones it meets). */
export async function sweepLeases(backend: RedisBackend): Promise<LeaseSweep> {
  const expired: { queue: string; count: number }[] = [];
  for (const queue of await backend.registry.queueNames()) {
    const base = backend.base(queue);
    const [count] = await backend.run<[number, string[]]>('sweep-leases', [base], [1000]);
    if (count > 0) expired.push({ queue, count });
  }
  backend.notify(expired.map(({ queue }) => queue));
  return { expired };
}

// Lease extension at the edge (POST /api/v1/lease/:leaseId/extend): parses the seconds and asks
// the storage, which extends (redis/queue-store.ts, lua/extend-lease-1.lua).
import type { BrokerContext } from './context.js';
import { invalidRequest } from './errors.js';
import type { LeaseExtension } from './storage.js';
import { integer, isObject, LIMITS } from './validation.js';

/** Queen's renew default: 60 s from now; an extension never shortens a lease. */
const DEFAULT_EXTENSION_SECONDS = 60;

export function parseExtendBody(body: unknown): number {
  if (body === undefined || body === null) return DEFAULT_EXTENSION_SECONDS;
  if (!isObject(body)) throw invalidRequest('body must be a JSON object');
  return integer(body.seconds, 'seconds', DEFAULT_EXTENSION_SECONDS, 1, LIMITS.maxLeaseExtensionSeconds);
}

export async function extendLease(
  context: BrokerContext,
  leaseId: string,
  seconds: number,
): Promise<LeaseExtension> {
  if (leaseId === '' || leaseId.length > LIMITS.maxNameLength) throw invalidRequest('leaseId is invalid');
  const extension = await context.storage.queues.extendLease(leaseId, seconds);
  await context.limits.extended(extension);
  return extension;
}

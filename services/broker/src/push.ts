import type { BrokerContext } from './context.js';
import { refuseEnvelopeShape } from './encryption.js';
import { invalidRequest, maintenanceMode } from './errors.js';
import { newId } from './identifiers.js';
import { DEFAULT_PARTITION, type PushItem, type PushResult } from './storage.js';
import { isObject, LIMITS, list, name, optionalString } from './validation.js';

/**
 * One push item from the wire. `producerSub` comes from the verified token only: a
 * `producerSub` in the body is ignored (broker-authentication seed).
 */
export function parsePushItem(
  raw: unknown,
  producerSub: string | undefined,
  where: string,
  maxPayloadBytes: number,
): PushItem {
  if (!isObject(raw)) throw invalidRequest(`${where} must be an object`);
  const queue = name(raw.queue, `${where}.queue`);
  const partition =
    raw.partition === undefined ? DEFAULT_PARTITION : name(raw.partition, `${where}.partition`);
  const payload = raw.payload === undefined ? raw.data : raw.payload;
  refuseEnvelopeShape(payload, where);
  const data = payload === undefined ? '{}' : JSON.stringify(payload);
  // A UTF-16 unit is at most 3 UTF-8 bytes: most payloads pass without being measured.
  if (data.length * 3 > maxPayloadBytes && Buffer.byteLength(data) > maxPayloadBytes) {
    throw invalidRequest(`${where}.payload exceeds ${maxPayloadBytes} bytes`);
  }
  return {
    queue,
    partition,
    transactionId: optionalString(raw.transactionId, `${where}.transactionId`) ?? newId(),
    messageId: newId(),
    traceId: optionalString(raw.traceId, `${where}.traceId`),
    data,
    producerSub: producerSub || null,
  };
}

export function parsePushBody(
  body: unknown,
  producerSub: string | undefined,
  maxPayloadBytes: number,
): PushItem[] {
  if (!isObject(body) || !Array.isArray(body.items)) throw invalidRequest('items array is required');
  return list(body.items, 'items', LIMITS.maxPushItems).map((item, index) =>
    parsePushItem(item, producerSub, `items[${index}]`, maxPayloadBytes),
  );
}

/** Stores items; resolves only after Redis acknowledged the write (the 201 promise). */
export async function push(context: BrokerContext, items: PushItem[]): Promise<PushResult[]> {
  if (items.length === 0) return [];
  if ((await context.storage.flags.get()).maintenanceMode) throw maintenanceMode();
  const results = await context.encryption.store(items, (sealed) => context.storage.queues.push(sealed));
  // One counter update per queue, not per item.
  const queued = new Map<string, number>();
  for (const result of results) {
    if (result.status === 'queued') queued.set(result.queue, (queued.get(result.queue) ?? 0) + 1);
  }
  for (const [queue, count] of queued) context.metrics.pushed.inc({ queue }, count);
  return results;
}

import type { BrokerContext } from './context.js';
import { invalidRequest } from './errors.js';
import { type AckInput, type AckResult, type AckStatus, QUEUE_MODE } from './storage.js';
import { isObject, LIMITS, list, name, optionalName, optionalString } from './validation.js';

const STATUSES = new Set<AckStatus>(['completed', 'success', 'failed', 'retry', 'dlq']);

export function parseAckItem(raw: unknown, defaultGroup: string | undefined, where: string): AckInput {
  if (!isObject(raw)) throw invalidRequest(`${where} must be an object`);
  if (typeof raw.transactionId !== 'string' || raw.transactionId === '') {
    throw invalidRequest(`${where}: transactionId is required`);
  }
  if (typeof raw.partitionId !== 'string' || raw.partitionId === '') {
    throw invalidRequest(`${where}: partitionId is required to ensure message uniqueness`);
  }
  const status = raw.status === undefined || raw.status === null ? 'completed' : raw.status;
  if (typeof status !== 'string' || !STATUSES.has(status as AckStatus)) {
    throw invalidRequest(`${where}: status must be one of ${[...STATUSES].join(', ')}`);
  }
  return {
    transactionId: name(raw.transactionId, `${where}.transactionId`),
    partitionId: name(raw.partitionId, `${where}.partitionId`),
    status: status as AckStatus,
    group: defaultGroup ?? optionalName(raw.consumerGroup, `${where}.consumerGroup`) ?? QUEUE_MODE,
    leaseId: optionalString(raw.leaseId, `${where}.leaseId`),
    error: optionalString(raw.error, `${where}.error`, LIMITS.maxAckErrorLength),
  };
}

export function parseAckBody(body: unknown): AckInput[] {
  if (!isObject(body)) throw invalidRequest('body must be a JSON object');
  return [parseAckItem(body, undefined, 'ack')];
}

export function parseBatchAckBody(body: unknown): AckInput[] {
  if (!isObject(body) || !Array.isArray(body.acknowledgments)) {
    throw invalidRequest('acknowledgments array is required');
  }
  const acknowledgments = list(body.acknowledgments, 'acknowledgments', LIMITS.maxAcks);
  const group =
    body.consumerGroup === undefined || body.consumerGroup === null
      ? undefined
      : name(body.consumerGroup, 'consumerGroup');
  return acknowledgments.map((item, index) => parseAckItem(item, group, `acknowledgments[${index}]`));
}

/** Per-item results (HTTP 200): a rejected ack is `success:false` with its reason, as in Queen. */
export async function ack(context: BrokerContext, acks: AckInput[]): Promise<AckResult[]> {
  if (acks.length === 0) return [];
  const results = await context.storage.queues.ack(acks);
  await context.limits.acknowledged(acks, results);
  // One counter update per (queue, status), not per ack: label lookups showed in the profile.
  const counts = new Map<string, { queue: string; status: AckStatus; count: number }>();
  results.forEach((result, index) => {
    if (!result.success || !result.queue) return;
    const status = (acks[index] as AckInput).status;
    const key = `${status}\0${result.queue}`;
    const entry = counts.get(key);
    if (entry) entry.count++;
    else counts.set(key, { queue: result.queue, status, count: 1 });
  });
  for (const { queue, status, count } of counts.values()) context.metrics.acked.inc({ queue, status }, count);
  return results;
}

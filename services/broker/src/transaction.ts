import { parseAckItem } from './ack.js';
import type { BrokerContext } from './context.js';
import { invalidRequest, maintenanceMode } from './errors.js';
import { newId } from './identifiers.js';
import { parsePushItem } from './push.js';
import type { HubUpdate, PushItem, TransactionOperation, TransactionOperationResult } from './storage.js';
import { boundedString, isObject, LIMITS, list } from './validation.js';

/**
 * `{operations:[{type:'ack', …} | {type:'push', items:[…]} | {type:'push', queue, …} |
 * {type:'publish', …}]}`;
 * push items are flattened in order, as Queen does. producerSub comes from the token.
 */
/** C0 and C1 controls: the hub refuses them in topics, ids and types (docs/hub.md). */
// biome-ignore lint/suspicious/noControlCharactersInRegex: finding control characters is the point
const CONTROL = /[\u0000-\u001f\u007f-\u009f]/;

function hubText(value: unknown, what: string, max: number): string {
  if (typeof value !== 'string' || value === '') throw invalidRequest(`${what} must be a non-empty string`);
  boundedString(value, what, max);
  if (CONTROL.test(value)) throw invalidRequest(`${what} must not hold control characters`);
  return value;
}

/**
 * Herald's `publish` operation (docs/broker-outbox.md): `{type:'publish', topic: string |
 * string[], data?: string, private?: boolean, id?: string, eventType?: string}`, a hub update
 * published atomically with the transaction. Without `id`, one is made here, before the
 * transaction runs: a resent script publishes the same update.
 */
function parsePublish(raw: Record<string, unknown>, where: string, maxPayloadBytes: number): HubUpdate {
  const topics = (
    Array.isArray(raw.topic) ? list(raw.topic, `${where}.topic`, LIMITS.maxPublishTopics) : [raw.topic]
  ).map((topic, index) =>
    hubText(
      topic,
      `${where}.topic${Array.isArray(raw.topic) ? `[${index}]` : ''}`,
      LIMITS.maxTopicTemplateLength,
    ),
  );
  if (topics.length === 0) throw invalidRequest(`${where}.topic must name at least one topic`);
  const data = raw.data ?? '';
  if (typeof data !== 'string') throw invalidRequest(`${where}.data must be a string`);
  if (Buffer.byteLength(data) > maxPayloadBytes)
    throw invalidRequest(`${where}.data must be at most ${maxPayloadBytes} bytes`);
  const isPrivate = raw.private ?? false;
  if (typeof isPrivate !== 'boolean') throw invalidRequest(`${where}.private must be a boolean`);
  return {
    id:
      raw.id === undefined || raw.id === null
        ? `urn:uuid:${newId()}`
        : hubText(raw.id, `${where}.id`, LIMITS.maxNameLength),
    topics,
    data,
    private: isPrivate,
    type:
      raw.eventType === undefined || raw.eventType === null
        ? undefined
        : hubText(raw.eventType, `${where}.eventType`, LIMITS.maxEventTypeLength),
  };
}

export function parseTransactionBody(
  body: unknown,
  producerSub: string | undefined,
  maxPayloadBytes: number,
  hubConfigured: boolean,
): TransactionOperation[] {
  if (!isObject(body) || !Array.isArray(body.operations))
    throw invalidRequest('operations array is required');
  const max = LIMITS.maxTransactionOperations;
  const tooMany = () => invalidRequest(`operations: a transaction holds at most ${max} operations`);
  if (body.operations.length > max) throw tooMany();
  const operations: TransactionOperation[] = [];
  body.operations.forEach((raw, index) => {
    const where = `operations[${index}]`;
    if (!isObject(raw)) throw invalidRequest(`${where} must be an object`);
    if (raw.type === 'push') {
      const items =
        raw.items === undefined || raw.items === null
          ? [raw]
          : list(raw.items, `${where}.items`, LIMITS.maxPushItems);
      // Counted before parsing: a flattened total over the bound is refused without the work.
      if (operations.length + items.length > max) throw tooMany();
      items.forEach((item, position) => {
        operations.push({
          type: 'push',
          item: parsePushItem(item, producerSub, `${where}.items[${position}]`, maxPayloadBytes),
        });
      });
    } else if (raw.type === 'ack') {
      operations.push({ type: 'ack', ack: parseAckItem(raw, undefined, where) });
    } else if (raw.type === 'publish') {
      if (!hubConfigured)
        throw invalidRequest(`${where}: publish needs a hub: this broker has no BROKER_HUB_URL`);
      operations.push({ type: 'publish', update: parsePublish(raw, where, maxPayloadBytes) });
    } else {
      throw invalidRequest(`${where}.type must be push, ack or publish`);
    }
  });
  if (operations.length === 0) throw invalidRequest('operations must not be empty');
  return operations;
}

export interface TransactionResponse {
  transactionId: string;
  success: boolean;
  results: TransactionOperationResult[];
  error?: string;
}

export async function runTransaction(
  context: BrokerContext,
  operations: TransactionOperation[],
): Promise<TransactionResponse> {
  const transactionId = newId();
  if (operations.some((op) => op.type === 'push') && (await context.storage.flags.get()).maintenanceMode) {
    throw maintenanceMode();
  }
  const pushes = operations.flatMap((op) => (op.type === 'push' ? [op.item] : []));
  // Over a push rate: refused before anything is applied (a 429, not a rejected transaction).
  await context.limits.takePush(pushes);
  const outcome = await context.encryption.store(pushes, (sealed) => {
    let next = 0;
    return context.storage.queues.transaction(
      operations.map((op) =>
        op.type === 'push' ? { type: 'push' as const, item: sealed[next++] as PushItem } : op,
      ),
    );
  });
  if (!outcome.success) {
    context.metrics.transactions.inc({ result: 'rejected' });
    const where = outcome.failedIndex >= 0 ? ` (operation ${outcome.failedIndex})` : '';
    return { transactionId, success: false, results: [], error: `${outcome.error}${where}` };
  }
  context.metrics.transactions.inc({ result: 'committed' });
  if (outcome.applyWindowMs !== undefined)
    context.metrics.transactionApplyWindow.observe(outcome.applyWindowMs / 1000);
  // Every ack of a committed transaction was applied: their in-flight slots are free.
  const acks = operations.flatMap((op) => (op.type === 'ack' ? [op.ack] : []));
  await context.limits.acknowledged(
    acks,
    acks.map(() => ({ success: true })),
  );
  for (const result of outcome.results) {
    if (result.type === 'push' && result.status === 'queued')
      context.metrics.pushed.inc({ queue: result.queue });
  }
  return { transactionId, success: true, results: outcome.results };
}

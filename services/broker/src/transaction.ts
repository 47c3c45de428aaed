import { parseAckItem } from './ack.js';
import type { BrokerContext } from './context.js';
import { invalidRequest, maintenanceMode } from './errors.js';
import { newId } from './identifiers.js';
import { parsePushItem } from './push.js';
import type { PushItem, TransactionOperation, TransactionOperationResult } from './storage.js';
import { isObject, LIMITS, list } from './validation.js';

/**
 * `{operations:[{type:'ack', …} | {type:'push', items:[…]} | {type:'push', queue, …}]}`;
 * push items are flattened in order, as Queen does. producerSub comes from the token.
 */
export function parseTransactionBody(
  body: unknown,
  producerSub: string | undefined,
  maxPayloadBytes: number,
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
    } else {
      throw invalidRequest(`${where}.type must be push or ack`);
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

/*
 * Queen's JSON shapes of what the storage answers (the broker's own shapes, storage.ts): field
 * names and order as Queen's server writes them, so its clients read our answers unchanged.
 */
import type {
  AckResult,
  LeaseExtension,
  PushResult,
  QueueMessageState,
  TransactionOperationResult,
} from '../storage.js';
import type { CycleAckResult } from '../streams/types.js';

export function pushResultsBody(results: readonly PushResult[]) {
  return results.map((result, index) => ({
    index,
    transaction_id: result.transactionId,
    status: result.status,
    message_id: result.messageId,
    partition_id: result.partitionId,
    trace_id: result.traceId,
    queueName: result.queue,
  }));
}

/** An ack's answer; `repeat` is a Herald field (docs/broker-api.md, "Acknowledgements are idempotent"). */
export function ackResultsBody(results: readonly AckResult[]) {
  return results.map((result, index) => ({
    index,
    transactionId: result.transactionId,
    success: result.success,
    error: result.error,
    queueName: result.queue,
    partitionName: result.partition,
    leaseReleased: result.leaseReleased,
    dlq: result.dlq,
    repeat: result.repeat,
  }));
}

export function transactionResultsBody(results: readonly TransactionOperationResult[]) {
  return results.map((result, index) => {
    if (result.type === 'push')
      return {
        index,
        type: 'push' as const,
        success: true as const,
        transactionId: result.transactionId,
        messageId: result.messageId,
        partitionId: result.partitionId,
        queueName: result.queue,
        status: result.status,
      };
    // Herald's extension (docs/broker-outbox.md): the hub update's id.
    if (result.type === 'publish')
      return { index, type: 'publish' as const, success: true as const, id: result.id };
    return {
      index,
      type: 'ack' as const,
      success: true as const,
      transactionId: result.transactionId,
      error: null,
      dlq: result.dlq,
      repeat: result.repeat,
    };
  });
}

export function leaseExtensionBody(extension: LeaseExtension) {
  return {
    leaseId: extension.leaseId,
    success: extension.success,
    error: extension.error,
    expiresAt: extension.expiresAt === null ? null : new Date(extension.expiresAt).toISOString(),
  };
}

export function cycleAckBody(result: CycleAckResult | null) {
  return (
    result && {
      success: true as const,
      count: result.count,
      lease_released: result.leaseReleased,
      dlq: result.dlq,
    }
  );
}

/** Queen's `GET /api/v1/status/queues/:queue/messages` rows (`queuePath`: `<queue>/<partition>`). */
export function queueMessagesBody(states: readonly QueueMessageState[]) {
  return states.map((state) => ({
    id: state.id,
    transactionId: state.transactionId,
    partitionId: state.partitionId,
    queuePath: `${state.queue}/${state.partition}`,
    queue: state.queue,
    partition: state.partition,
    status: state.status,
    createdAt: state.createdAt,
  }));
}

/*
 * A push as the storage takes it and what it answers, on their own: the streams API
 * (streams/types.ts) uses them too, and storage.ts, which re-exports them, imports the streams
 * types (no import cycle, type-only ones included).
 */

export interface PushItem {
  queue: string;
  partition: string;
  transactionId: string;
  messageId: string;
  traceId: string | null;
  /** The payload as JSON text (serialized once at the edge, stored as is). */
  data: string;
  producerSub: string | null;
}

export interface PushResult {
  index: number;
  transaction_id: string;
  status: 'queued' | 'duplicate';
  message_id: string;
  partition_id: string;
  trace_id: string | null;
  queueName: string;
}

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

/** What one push item became (routes/wire.ts gives it Queen's names). */
export interface PushResult {
  transactionId: string;
  status: 'queued' | 'duplicate';
  messageId: string;
  partitionId: string;
  traceId: string | null;
  queue: string;
}

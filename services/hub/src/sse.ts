import type { Update } from './update.js';

/** Response headers of a subscription stream (hub.md, subscribe). */
export const SSE_HEADERS: Readonly<Record<string, string>> = {
  'content-type': 'text/event-stream',
  'cache-control': 'private, no-cache, no-store, must-revalidate, max-age=0',
  'x-accel-buffering': 'no',
  connection: 'keep-alive',
};

/** The first bytes: a comment, so the headers are flushed and EventSource.onopen fires at once. */
export const OPENING_COMMENT = Buffer.from(':\n\n');
export const HEARTBEAT_COMMENT = Buffer.from(':\n\n');

const LINE_BREAK = /\r\n|\r|\n/;

/**
 * One SSE event: `[event:]` `[retry:]` `id:` then one `data:` line per line of the data (split on
 * CRLF, CR and LF, as the SSE parser splits), then a blank line.
 */
export function formatEvent(update: Update): string {
  let text = '';
  if (update.type) text += `event: ${update.type}\n`;
  if (update.retry !== undefined) text += `retry: ${update.retry}\n`;
  text += `id: ${update.id}\n`;
  for (const line of update.data.split(LINE_BREAK)) text += `data: ${line}\n`;
  return `${text}\n`;
}

const encoded = new WeakMap<Update, Buffer>();

/** The event bytes of an update, encoded once however many subscribers receive it. */
export function eventBytes(update: Update): Buffer {
  let bytes = encoded.get(update);
  if (!bytes) {
    bytes = Buffer.from(formatEvent(update));
    encoded.set(update, bytes);
  }
  return bytes;
}

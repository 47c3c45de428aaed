import type { Update } from './update.js';

/** Response headers of a subscription stream (hub.md, subscribe). */
export const SSE_HEADERS: Readonly<Record<string, string>> = {
  'content-type': 'text/event-stream',
  'cache-control': 'private, no-cache, no-store, must-revalidate, max-age=0',
  'x-accel-buffering': 'no',
};

/**
 * What an HTTP/1.x stream adds. HTTP/2 has no connection-specific header (RFC 9113 §8.2.2):
 * node would drop it with a warning.
 */
export const SSE_HEADERS_HTTP1: Readonly<Record<string, string>> = {
  ...SSE_HEADERS,
  connection: 'keep-alive',
};

/**
 * `text` as one flat string. V8 keeps a string built piece by piece (`+`, a template) as a rope,
 * one 32-byte node per piece, until something flattens it, in place (the rope's nodes are then
 * garbage). Measuring its UTF-8 length does; a call into node's C++ is never dropped as dead
 * code, where an unused `Number(text)` is, once optimized (measured: nothing flattened).
 */
export function flat(text: string): string {
  Buffer.byteLength(text);
  return text;
}

const CRLF = Buffer.from('\r\n');

/**
 * Bytes ready for a stream: the SSE text as is (`raw`), and the same wrapped as one HTTP/1.1
 * chunk (`chunked`: `<hex length>CRLF<raw>CRLF`). Built once and shared by every subscriber, so a
 * delivery is one socket write of a shared Buffer: no per-subscriber encoding or chunk framing
 * (profile of the fan-out: node's per-write chunk framing was most of the JavaScript cost).
 */
export interface Frame {
  readonly raw: Buffer;
  readonly chunked: Buffer;
}

export function frameOf(text: string): Frame {
  const raw = Buffer.from(text);
  const chunked = Buffer.concat([Buffer.from(`${raw.length.toString(16)}\r\n`), raw, CRLF]);
  return { raw, chunked };
}

/** The first bytes: a comment, so the headers are flushed and EventSource.onopen fires at once. */
export const OPENING_COMMENT = Buffer.from(':\n\n');
export const HEARTBEAT = frameOf(':\n\n');

const LINE_BREAK = /\r\n|\r|\n/;

/**
 * One SSE event: `[event:]` `[retry:]` `id:`, then with `topics` one `topics:` line per topic
 * (MERCURE_TOPICS_FIELD; topics hold no line break, publish refuses control characters), then
 * one `data:` line per line of the data (split on CRLF, CR and LF, as the SSE parser splits),
 * then a blank line.
 */
export function formatEvent(update: Update, topics?: readonly string[]): string {
  let text = '';
  if (update.type) text += `event: ${update.type}\n`;
  if (update.retry !== undefined) text += `retry: ${update.retry}\n`;
  text += `id: ${update.id}\n`;
  if (topics) for (const topic of topics) text += `topics: ${topic}\n`;
  for (const line of update.data.split(LINE_BREAK)) text += `data: ${line}\n`;
  return `${text}\n`;
}

const frames = new WeakMap<Update, Frame>();

/** The event frame of an update, encoded once however many subscribers receive it. */
export function eventFrame(update: Update): Frame {
  let frame = frames.get(update);
  if (!frame) {
    frame = frameOf(formatEvent(update));
    frames.set(update, frame);
  }
  return frame;
}

const framesWithTopics = new WeakMap<Update, Frame>();

/**
 * The event frame with every topic of the update as `topics` fields: what each subscriber with
 * the topics field gets of a public update, encoded once. A private update's list depends on the
 * subscriber's token (Subscriber.frameOf).
 */
export function eventFrameWithTopics(update: Update): Frame {
  let frame = framesWithTopics.get(update);
  if (!frame) {
    frame = frameOf(formatEvent(update, update.topics));
    framesWithTopics.set(update, frame);
  }
  return frame;
}

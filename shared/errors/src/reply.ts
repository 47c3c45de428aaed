import { publicMessage, retryAfterSeconds, statusOf } from './herald-error.js';

/** The part of a fastify reply the mapping uses (FastifyReply satisfies it). */
export interface ErrorReply {
  code(statusCode: number): ErrorReply;
  type(contentType: string): ErrorReply;
  header(name: string, value: string): ErrorReply;
  send(payload?: unknown): unknown;
}

/** How a service spells an error body: the broker's `{"error": …}` JSON, or the hub's plain text. */
export type ErrorBodyFormat = 'json' | 'text';

/**
 * Answers a request that failed with `error`: its status and public message (`publicMessage`),
 * as JSON `{"error": "<message>"}` or as plain text. Any other error answers 500 with the
 * standard text, whatever it says: the caller logs it. An error that says when to retry
 * (`retryAfterMs`) also sets `Retry-After`.
 */
export function sendError(reply: ErrorReply, error: unknown, format: ErrorBodyFormat = 'json'): unknown {
  const retryAfter = retryAfterSeconds(error);
  if (retryAfter !== undefined) reply.header('retry-after', String(retryAfter));
  return sendErrorBody(reply, statusOf(error), publicMessage(error), format);
}

/**
 * Answers `status` with `message` spelled as `format`. For a message already known to be
 * public (fastify's own refusal of a malformed request); any other error goes through `sendError`.
 */
export function sendErrorBody(
  reply: ErrorReply,
  status: number,
  message: string,
  format: ErrorBodyFormat = 'json',
): unknown {
  return format === 'json'
    ? reply.code(status).send({ error: message })
    : reply.code(status).type('text/plain; charset=utf-8').send(message);
}

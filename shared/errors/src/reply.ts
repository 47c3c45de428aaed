import { publicMessage, statusOf } from './herald-error.js';

/** The part of a fastify reply the mapping uses (FastifyReply satisfies it). */
export interface ErrorReply {
  code(statusCode: number): ErrorReply;
  type(contentType: string): ErrorReply;
  send(payload?: unknown): unknown;
}

/** How a service spells an error body: the broker's `{"error": …}` JSON, or the hub's plain text. */
export type ErrorBodyFormat = 'json' | 'text';

/**
 * Answers a request that failed with `error`: its status and public message (`publicMessage`),
 * as JSON `{"error": "<message>"}` or as plain text. Any other error answers 500 with the
 * standard text, whatever it says: the caller logs it.
 */
export function sendError(reply: ErrorReply, error: unknown, format: ErrorBodyFormat = 'json'): unknown {
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

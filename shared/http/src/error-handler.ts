import { type ErrorBodyFormat, HeraldError, sendError, sendErrorBody } from '@herald/errors';
import type { FastifyError, FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';

/** A request refused with a text the client may read: an exposed typed error, or fastify's own 4xx. */
export interface Refusal {
  readonly status: number;
  readonly code: string | undefined;
  /** What the client reads. */
  readonly message: string;
  /** What the route threw, before `map`: for logs only, its text may name internals. */
  readonly thrown: Error;
  /** Whether `map` turned `thrown` into another error (a storage outage into its 503). */
  readonly mapped: boolean;
}

/** What a service adds to the one error handler: its wire spelling and its own failures. */
export interface ErrorHandlerOptions {
  /** The body of every error answer (`sendError`): the broker's `{"error": …}`, the hub's plain text. */
  readonly format: ErrorBodyFormat;
  /**
   * The error the service answers a failure with: its typed 503 for a failure that means "not
   * done, retry" (Redis or a transport unreachable), anything else returned as it is.
   */
  readonly map?: (error: Error) => unknown;
  /** Runs before every answer, with the mapped error: a header (the hub's challenge), a counter. */
  readonly onAnswer?: (error: unknown, reply: FastifyReply) => void;
  /** Logs a refusal; unset, refusals are not logged (they are the client's doing). */
  readonly logRefusal?: (request: FastifyRequest, refusal: Refusal) => void;
}

/**
 * Installs the error handler both services answer failed requests with (docs/contracts.md,
 * "Errors"): a typed error (`HeraldError`) answers its status and, when exposed, its message;
 * fastify's own refusal of a request (body too large, unsupported content type) its 4xx and
 * message; anything else its status's standard text, and is logged as a server fault. The
 * services differ only by the hooks in `options`.
 */
export function installErrorHandler(app: FastifyInstance, options: ErrorHandlerOptions): void {
  const { format, map, onAnswer, logRefusal } = options;
  app.setErrorHandler((thrown: FastifyError | Error, request, reply) => {
    const error = map ? map(thrown) : thrown;
    onAnswer?.(error, reply);
    if (error instanceof HeraldError && (error.statusCode < 500 || error.expose)) {
      logRefusal?.(request, {
        status: error.statusCode,
        code: error.code,
        message: error.message,
        thrown,
        mapped: error !== thrown,
      });
      return sendError(reply, error, format);
    }
    const status = (thrown as FastifyError).statusCode;
    if (!(error instanceof HeraldError) && typeof status === 'number' && status >= 400 && status < 500) {
      // fastify's own refusals of the request: their messages describe the request, not internals.
      const code = (thrown as FastifyError).code;
      logRefusal?.(request, { status, code, message: thrown.message, thrown, mapped: error !== thrown });
      return sendErrorBody(reply, status, thrown.message, format);
    }
    // Name, message and stack only: ioredis errors carry the failed command, whose arguments
    // are a whole Lua script (EVAL) or every payload of the request. Under `error`: pino's `err`
    // serializer would rename the type of this plain object "Object".
    request.log.error(
      { error: { type: thrown.name, message: thrown.message, stack: thrown.stack } },
      'request failed',
    );
    return sendError(reply, error, format);
  });
}

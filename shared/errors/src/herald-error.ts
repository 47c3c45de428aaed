import { createRequire } from 'node:module';

/*
 * node:http through require, not `import`: on Node 26 an ESM import of node:http reads every
 * export, and its lazy `WebSocket` export then loads Node's bundled undici, ~8 MB of heap in a
 * broker that never uses it (docs/benchmarks.md, "Broker footprint").
 */
const { STATUS_CODES } = createRequire(import.meta.url)('node:http') as typeof import('node:http');

/**
 * The areas of the one code scheme, `HERALD_<AREA>_<REASON>` (docs/contracts.md, "Errors"):
 * the package or service that raises the error, then what went wrong, in capitals.
 */
export type ErrorArea = 'AUTH' | 'BROKER' | 'CONFIG' | 'HTTP' | 'HUB' | 'REDIS';
export type HeraldErrorCode = `HERALD_${ErrorArea}_${string}`;

const CODE = /^HERALD_(AUTH|BROKER|CONFIG|HTTP|HUB|REDIS)_[A-Z][A-Z0-9_]*$/;

export interface HeraldErrorOptions {
  /** The underlying failure, for logs only: never sent to a client. */
  readonly cause?: unknown;
  /**
   * Whether `message` may reach a client. Default: for a 4xx (it is about the client's own
   * request). A 5xx message is exposed only when it is a fixed text chosen for clients (a
   * maintenance notice); otherwise the client reads the status's standard text.
   */
  readonly expose?: boolean;
  /**
   * When retrying may succeed (ms from now): the answer carries `Retry-After` in whole seconds,
   * rounded up, at least 1 (RFC 9110, section 10.2.3). For a 429 over a limit, a 503 that ends.
   */
  readonly retryAfterMs?: number;
}

/**
 * The base of every typed error Herald answers a request with (fastify's `FST_ERR_*` habit):
 * a stable `code` for programs and logs, the HTTP `statusCode` the edge maps it to, and a
 * `message` that is public only when `expose` says so. Internal detail (a Redis address, a
 * library's text) goes in `cause`, which is logged and never sent.
 */
export class HeraldError extends Error {
  override readonly name: string = 'HeraldError';
  readonly expose: boolean;
  /** See HeraldErrorOptions.retryAfterMs. */
  readonly retryAfterMs: number | undefined;

  constructor(
    readonly code: HeraldErrorCode,
    readonly statusCode: number,
    message: string,
    options: HeraldErrorOptions = {},
  ) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause });
    if (!CODE.test(code)) throw new TypeError(`error code ${code} does not follow HERALD_<AREA>_<REASON>`);
    if (!Number.isInteger(statusCode) || statusCode < 400 || statusCode > 599) {
      throw new TypeError(`error ${code}: status ${statusCode} is not an HTTP error status`);
    }
    this.expose = options.expose ?? statusCode < 500;
    this.retryAfterMs = options.retryAfterMs;
  }
}

export function isHeraldError(error: unknown): error is HeraldError {
  return error instanceof HeraldError;
}

/** The `Retry-After` value (whole seconds, at least 1) of an error that says when to retry, else undefined. */
export function retryAfterSeconds(error: unknown): number | undefined {
  if (!(error instanceof HeraldError) || error.retryAfterMs === undefined) return undefined;
  return Math.max(1, Math.ceil(error.retryAfterMs / 1000));
}

/** The status a request failing with `error` answers: its own for a HeraldError, else 500. */
export function statusOf(error: unknown): number {
  return error instanceof HeraldError ? error.statusCode : 500;
}

/**
 * What a client may read of `error`: the message of an exposed HeraldError, else the standard
 * text of its status (`Service Unavailable`, `Internal Server Error`). Never a raw error's text.
 */
export function publicMessage(error: unknown): string {
  if (error instanceof HeraldError && error.expose) return error.message;
  const status = statusOf(error);
  return STATUS_CODES[status] ?? 'Error';
}

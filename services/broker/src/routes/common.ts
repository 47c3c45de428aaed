import { installErrorHandler } from '@herald/http';
import { loggableError } from '@herald/redis';
import type { FastifyInstance, FastifyReply } from 'fastify';
import { asStorageUnavailable, invalidJson, STORAGE_FULL, tooDeep } from '../errors.js';
import { depthExceededAt } from '../json-depth.js';
import { LIMITS } from '../validation.js';
import { PUBLIC } from './access.js';

/** At most one warning per node in this time that Redis refused a write because it is full. */
const FULL_WARNING_INTERVAL_MS = 60_000;

const CORS_HEADERS = {
  'access-control-allow-origin': '*',
  'access-control-allow-methods': 'GET, POST, PUT, DELETE, OPTIONS',
  'access-control-allow-headers': 'Content-Type, Authorization, X-Request-Id',
  'access-control-max-age': '86400',
  // A browser client (the console) must be able to read the RFC 6750 challenge of a 401/403.
  'access-control-expose-headers': 'WWW-Authenticate',
};

/**
 * Wire conventions shared by every route (docs/broker-api.md): JSON bodies (malformed → 400 with a
 * message), CORS on responses, OPTIONS → 204, errors as `{"error":"…"}` with the status the
 * typed error carries (`installErrorHandler` of `@herald/http`); a storage that cannot serve is a
 * 503, anything unexpected a 500, both with a fixed text: internal messages reach the log, never
 * the client.
 */
export function registerConventions(app: FastifyInstance): void {
  app.removeAllContentTypeParsers();
  app.addContentTypeParser('*', { parseAs: 'string' }, (_request, body, done) => {
    const text = String(body);
    if (text.trim() === '') return done(null, undefined);
    const deepAt = depthExceededAt(text, LIMITS.maxJsonDepth);
    if (deepAt >= 0) {
      return done(tooDeep(LIMITS.maxJsonDepth, deepAt), undefined);
    }
    try {
      done(null, JSON.parse(text));
    } catch (error) {
      done(invalidJson((error as Error).message), undefined);
    }
  });

  app.addHook('onSend', async (_request, reply) => {
    reply.headers(CORS_HEADERS);
  });

  app.options('*', PUBLIC, async (_request, reply) => reply.code(204).send());

  app.setNotFoundHandler(async (request, reply) =>
    reply.code(404).send({ error: `Route ${request.method} ${request.url.split('?')[0]} not found` }),
  );

  // When this node last warned that Redis is full.
  let fullWarnedAt = Number.NEGATIVE_INFINITY;
  installErrorHandler(app, {
    format: 'json',
    map: (error) => asStorageUnavailable(error) ?? error,
    // Refusals are the client's doing and not logged, but for a storage outage: expected while
    // Redis is away and logged once per outage by the storage (OutageLog), so a line per refused
    // request stays at debug. A full Redis has no outage to report it: a warning at most once a
    // minute. The client reads a fixed text.
    logRefusal: (request, { mapped, thrown, code }) => {
      if (!mapped) return;
      const now = performance.now();
      if (code === STORAGE_FULL && now - fullWarnedAt >= FULL_WARNING_INTERVAL_MS) {
        fullWarnedAt = now;
        request.log.warn(
          { error: loggableError(thrown) },
          'Redis is full (maxmemory): writes that add data are refused until memory is freed',
        );
      } else {
        request.log.debug({ error: loggableError(thrown) }, 'storage unavailable');
      }
    },
  });
}

/** Sends a JSON text that was built by hand (pop bodies splice stored payloads in). */
export function sendJsonText(reply: FastifyReply, status: number, text: string): FastifyReply {
  return reply.code(status).type('application/json; charset=utf-8').send(text);
}

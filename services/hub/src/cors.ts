import type { FastifyInstance } from 'fastify';

export interface CorsOptions {
  /** Explicit origins, or `['*']`; empty: no CORS headers at all. */
  readonly origins: readonly string[];
  /** Only ever true with explicit origins (config.ts refuses `*` with credentials). */
  readonly credentials: boolean;
}

/**
 * Readable by scripts cross-origin: the resume cursor, the RFC 6750 challenge (a browser client
 * learns from it why it was refused and where the resource metadata is), and the subscriptions
 * API's `Link: rel="mercure"` (Mercure draft: a hub serving cross-origin clients exposes it).
 */
const EXPOSED = 'Last-Event-ID, Mercure-Last-Event-ID, WWW-Authenticate, Link';
const ALLOWED_HEADERS = 'Authorization, Last-Event-ID, Cache-Control, Content-Type';

/** CORS for the hub's routes (hub.md, CORS and cookies), with preflight answers. */
export function registerCors(app: FastifyInstance, options: CorsOptions): void {
  if (options.origins.length === 0) return;
  const wildcard = options.origins.includes('*');
  const allowed = new Set(options.origins);

  app.addHook('onRequest', async (request, reply) => {
    const origin = request.headers.origin;
    if (!origin) return;
    if (wildcard) {
      reply.header('access-control-allow-origin', '*');
    } else {
      reply.header('vary', 'Origin');
      if (!allowed.has(origin)) return;
      reply.header('access-control-allow-origin', origin);
      if (options.credentials) reply.header('access-control-allow-credentials', 'true');
    }
    reply.header('access-control-expose-headers', EXPOSED);
  });

  const preflight = (methods: string) => async (_request: unknown, reply: import('fastify').FastifyReply) => {
    reply.header('access-control-allow-methods', methods);
    reply.header('access-control-allow-headers', ALLOWED_HEADERS);
    reply.header('access-control-max-age', '600');
    return reply.code(204).send();
  };
  app.options('/.well-known/mercure', preflight('GET, HEAD, POST, OPTIONS'));
  app.options('/.well-known/mercure/*', preflight('GET, HEAD, POST, OPTIONS'));
  // Herald's admin routes (revocations, limits), for an operator's page such as the console.
  app.options('/herald/admin/*', preflight('GET, POST, PUT, DELETE, OPTIONS'));
}

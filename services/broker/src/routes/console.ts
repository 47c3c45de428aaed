/*
 * The operations console (issue #13, section 1): the static files `services/console` builds,
 * served by every broker node at `/console/`. The files are public (the table in
 * shared/auth/src/broker-routes.ts); the API calls the console makes carry the operator's token.
 * A node whose console was not built still starts: `/console/` then answers 404 saying so.
 */
import { existsSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { extname, resolve, sep } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { FastifyInstance, FastifyReply } from 'fastify';
import { PUBLIC } from './access.js';

export const CONSOLE_PATH = '/console/';

/** `services/console/dist`, seen from `services/broker/dist/routes/console.js`. */
export const CONSOLE_DIST = fileURLToPath(new URL('../../../console/dist/', import.meta.url));

const CONTENT_TYPES: Readonly<Record<string, string>> = {
  '.html': 'text/html; charset=utf-8',
  '.js': 'text/javascript; charset=utf-8',
  '.css': 'text/css; charset=utf-8',
  '.svg': 'image/svg+xml',
  '.png': 'image/png',
  '.ico': 'image/x-icon',
  '.json': 'application/json; charset=utf-8',
  '.txt': 'text/plain; charset=utf-8',
};

/*
 * The console talks to this broker ('self') and to a hub the operator names (any http(s)
 * origin, SSE included); it runs no inline script. uPlot and Preact set element styles.
 */
const CONTENT_SECURITY_POLICY = [
  "default-src 'self'",
  "script-src 'self'",
  "style-src 'self' 'unsafe-inline'",
  "img-src 'self' data:",
  "connect-src 'self' http: https:",
  "frame-ancestors 'none'",
  "base-uri 'none'",
  "form-action 'none'",
].join('; ');

/** The file a request names under `root`, or undefined when it would leave it. */
function fileUnder(root: string, relative: string): string | undefined {
  const file = resolve(root, relative === '' ? 'index.html' : relative);
  return file.startsWith(root.endsWith(sep) ? root : root + sep) ? file : undefined;
}

async function sendFile(reply: FastifyReply, file: string): Promise<FastifyReply> {
  let body: Buffer;
  try {
    body = await readFile(file);
  } catch {
    return reply.code(404).send({ error: 'Not found' });
  }
  const type = CONTENT_TYPES[extname(file)] ?? 'application/octet-stream';
  // Vite names every asset by its content hash: cache it for good; the page itself, never.
  const immutable = file.includes(`${sep}assets${sep}`);
  return reply
    .header('content-type', type)
    .header('cache-control', immutable ? 'public, max-age=31536000, immutable' : 'no-cache')
    .header('x-content-type-options', 'nosniff')
    .header('content-security-policy', CONTENT_SECURITY_POLICY)
    .header('referrer-policy', 'no-referrer')
    .send(body);
}

/** Registers `/console` (redirect), `/console/` and `/console/*`; returns whether the files exist. */
export function registerConsoleRoutes(app: FastifyInstance, root: string = CONSOLE_DIST): boolean {
  const built = existsSync(resolve(root, 'index.html'));
  if (built) app.log.info({ path: CONSOLE_PATH }, `operations console served at ${CONSOLE_PATH}`);
  else
    app.log.warn(
      { path: CONSOLE_PATH, root },
      'operations console not built (run `npm run build`): /console/ answers 404',
    );

  app.get('/console', PUBLIC, async (_request, reply) => reply.redirect(CONSOLE_PATH, 302));
  app.get<{ Params: { '*': string } }>('/console/*', PUBLIC, async (request, reply) => {
    if (!built)
      return reply
        .code(404)
        .send({ error: 'The console was not built on this node: run `npm run build` (services/console)' });
    const file = fileUnder(root, request.params['*']);
    if (!file) return reply.code(404).send({ error: 'Not found' });
    return sendFile(reply, file);
  });
  return built;
}

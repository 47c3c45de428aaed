import type { FastifyInstance } from 'fastify';
import { DEV_UI_HTML } from './page.js';

export const DEV_UI_PATH = '/.well-known/mercure/ui/';

/** Serves the dev UI; registered only in development mode (MERCURE_DEV). */
export function registerDevUi(app: FastifyInstance): void {
  app.get('/.well-known/mercure/ui', (_request, reply) => reply.redirect(DEV_UI_PATH));
  app.get(DEV_UI_PATH, (_request, reply) =>
    reply
      .type('text/html; charset=utf-8')
      .header(
        'content-security-policy',
        "default-src 'self'; script-src 'unsafe-inline'; style-src 'unsafe-inline'",
      )
      .send(DEV_UI_HTML),
  );
}

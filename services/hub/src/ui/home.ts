import type { FastifyInstance } from 'fastify';
import { DEV_UI_PATH } from './routes.js';

export interface HomeOptions {
  readonly dev: boolean;
  readonly subscriptions: boolean;
}

/**
 * The page at `/` (issue #13): what this server is and where to go, as the reference hub has.
 * Self-contained HTML (no script, no external asset), so it works offline and under a strict CSP.
 */
export function homePage({ dev, subscriptions }: HomeOptions): string {
  const devUi = dev
    ? `<li><a href="${DEV_UI_PATH}">Dev UI</a>: subscribe and publish from this browser.</li>`
    : '<li>Dev UI: off (development mode only, <code>MERCURE_DEV=1</code>).</li>';
  const subscriptionsApi = subscriptions
    ? '<li><a href="/.well-known/mercure/subscriptions">Active subscriptions</a> (needs a subscriber token).</li>'
    : '<li>Subscriptions API: off (<code>MERCURE_SUBSCRIPTIONS=1</code>).</li>';
  return `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>Herald hub</title>
<style>
body { font: 16px/1.5 system-ui, sans-serif; max-width: 44rem; margin: 3rem auto; padding: 0 1rem; color: #1f2933; }
h1 { font-size: 1.6rem; margin-bottom: 0.2rem; }
code { background: #eef1f4; padding: 0 0.25rem; border-radius: 3px; }
a { color: #0b63ce; }
p.lead { color: #52606d; margin-top: 0; }
</style>
</head>
<body>
<h1>Herald hub</h1>
<p class="lead">A Mercure hub: clients subscribe to topics with Server-Sent Events at
<a href="/.well-known/mercure"><code>/.well-known/mercure</code></a> and publishers POST updates there.</p>
<h2>Here</h2>
<ul>
${devUi}
${subscriptionsApi}
<li><a href="/.well-known/oauth-protected-resource/.well-known/mercure">Protected resource metadata</a> (RFC 9728).</li>
<li><a href="/healthz">/healthz</a>, <a href="/readyz">/readyz</a>, <a href="/metrics">/metrics</a>.</li>
</ul>
<h2>Elsewhere</h2>
<ul>
<li>Operations console: on every broker node at <code>/console/</code>
(with <code>npm start</code>: <a href="http://127.0.0.1:6632/console/">http://127.0.0.1:6632/console/</a>).</li>
<li>Docs, in the repository: <code>docs/hub.md</code> (quick start, configuration),
<code>docs/auth.md</code> (tokens), <code>docs/broker.md</code>.</li>
</ul>
</body>
</html>
`;
}

/**
 * The home page loads nothing, from anywhere, but its inline style; a script running on it (the
 * Mercure conformance suite's, or an application's served under the hub's origin) may still
 * connect to the hub itself: `connect-src 'self'` (issue #22: without it, EventSource and fetch
 * fall back to `default-src 'none'` and are blocked).
 */
export const HOME_CONTENT_SECURITY_POLICY =
  "default-src 'none'; connect-src 'self'; style-src 'unsafe-inline'; base-uri 'none'; form-action 'none'";

/** Serves the landing page at `/` (GET and HEAD). */
export function registerHome(app: FastifyInstance, options: HomeOptions): void {
  const html = homePage(options);
  app.get('/', (_request, reply) =>
    reply
      .type('text/html; charset=utf-8')
      .header('content-security-policy', HOME_CONTENT_SECURITY_POLICY)
      .send(html),
  );
}

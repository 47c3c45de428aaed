/**
 * The broker's route access levels. Five levels, not ordered; see broker-access.ts for who passes
 * which. A request's level is the one its MATCHED ROUTE declares (`config.access`, see
 * broker-fastify.ts), so no spelling of a URL can reach a handler under another route's rules
 * (issue #8). The documented prefix table below (docs/broker-api.md, "Routes") is the specification those declarations follow; a
 * test checks every registered broker route against it.
 */
export type AccessLevel = 'public' | 'admin' | 'read-only' | 'write-only' | 'read-write';

export const ACCESS_LEVELS: readonly AccessLevel[] = [
  'public',
  'admin',
  'read-only',
  'write-only',
  'read-write',
];

export function isAccessLevel(value: unknown): value is AccessLevel {
  return typeof value === 'string' && (ACCESS_LEVELS as readonly string[]).includes(value);
}

interface RouteRule {
  readonly level: AccessLevel;
  /** Methods the rule applies to; absent = every method. */
  readonly methods?: readonly string[];
  readonly path: string;
  readonly match: 'exact' | 'prefix';
}

/**
 * Queen's list (docs/auth.md, "Broker profile"), first match wins, in Queen's order. "Prefix" follows Queen's `*`: a
 * path under `/assets/`, anything starting with `/favicon` or `/api/v1/status`. A prefix that
 * ends in `/` also covers the bare path without it (`/internal` is admin like `/internal/x`).
 */
export const BROKER_ROUTE_TABLE: readonly RouteRule[] = [
  // public: health, metrics, the dashboard, and the dashboard-identity routes, public so they
  // can answer the auth question (with JWT on, /auth/me returns 401 from its own handler).
  { level: 'public', match: 'exact', path: '/health' },
  { level: 'public', match: 'exact', path: '/metrics' },
  { level: 'public', match: 'exact', path: '/metrics/prometheus' },
  { level: 'public', match: 'exact', path: '/' },
  { level: 'public', match: 'prefix', path: '/assets/' },
  { level: 'public', match: 'prefix', path: '/favicon' },
  { level: 'public', match: 'exact', path: '/auth/me' },
  { level: 'public', match: 'exact', path: '/auth/login' },
  { level: 'public', match: 'exact', path: '/auth/logout' },
  // Not in Queen's list (Queen has no such routes): the server kit's liveness and readiness probes,
  // public like /health so Kubernetes probes work with JWT_ENABLED=true. They reveal no data.
  { level: 'public', match: 'exact', path: '/healthz' },
  { level: 'public', match: 'exact', path: '/readyz' },
  // Not in Queen's list either: Herald's operations console (static files, issue #13). The API calls
  // it makes carry the operator's token and take their own routes' levels.
  { level: 'public', match: 'prefix', path: '/console/' },
  // admin
  { level: 'admin', match: 'prefix', path: '/api/v1/system/' },
  { level: 'admin', match: 'prefix', path: '/internal/' },
  { level: 'admin', methods: ['DELETE'], match: 'prefix', path: '/api/v1/consumer-groups/' },
  { level: 'admin', methods: ['DELETE'], match: 'prefix', path: '/api/v1/resources/queues/' },
  { level: 'admin', match: 'exact', path: '/api/v1/stats/refresh' },
  // read-only: reads (GET) of status and listings, plus the streams state read.
  { level: 'read-only', methods: ['GET'], match: 'exact', path: '/status' },
  { level: 'read-only', methods: ['GET'], match: 'prefix', path: '/api/v1/status' },
  { level: 'read-only', methods: ['GET'], match: 'prefix', path: '/api/v1/analytics' },
  { level: 'read-only', methods: ['GET'], match: 'prefix', path: '/api/v1/resources/' },
  { level: 'read-only', methods: ['GET'], match: 'prefix', path: '/api/v1/messages' },
  { level: 'read-only', methods: ['GET'], match: 'prefix', path: '/api/v1/consumer-groups' },
  { level: 'read-only', methods: ['GET'], match: 'prefix', path: '/api/v1/dlq' },
  // Herald's: a consumer group's lag, what an autoscaler reads (docs/broker-autoscaling.md).
  { level: 'read-only', methods: ['GET'], match: 'exact', path: '/api/v1/lag' },
  // Herald's: the outbox relay's backlog (docs/broker-outbox.md), what the console watches.
  { level: 'read-only', methods: ['GET'], match: 'exact', path: '/api/v1/outbox' },
  { level: 'read-only', methods: ['GET'], match: 'prefix', path: '/api/v1/traces' },
  { level: 'read-only', match: 'exact', path: '/streams/v1/state/get' },
  // write-only: "POST /api/v1/push, and only that".
  { level: 'write-only', methods: ['POST'], match: 'exact', path: '/api/v1/push' },
];

/** Everything else, including any unrecognised path: read-write, never public (seed). */
export const DEFAULT_ACCESS_LEVEL: AccessLevel = 'read-write';

function ruleMatches(rule: RouteRule, method: string, path: string): boolean {
  if (rule.methods && !rule.methods.includes(method)) return false;
  if (rule.match === 'exact') return path === rule.path;
  return path.startsWith(rule.path) || (rule.path.endsWith('/') && path === rule.path.slice(0, -1));
}

/**
 * The level the documented table gives a canonical route path (a registered route's path with
 * parameter values filled in). HEAD is classified as GET: fastify answers HEAD with the GET
 * route, so it reads exactly what GET reads. Not used per request: requests take the level their
 * matched route declares.
 */
export function classifyBrokerRoute(method: string, path: string): AccessLevel {
  const upper = method.toUpperCase();
  const effectiveMethod = upper === 'HEAD' ? 'GET' : upper;
  const rule = BROKER_ROUTE_TABLE.find((candidate) => ruleMatches(candidate, effectiveMethod, path));
  return rule ? rule.level : DEFAULT_ACCESS_LEVEL;
}

/**
 * The path a request was routed to: the matched route's pattern with the parameter values the
 * router extracted (already decoded) put back, e.g. `/api/v1/pop/queue/:queue` with
 * `{queue: 'orders'}` → `/api/v1/pop/queue/orders`; a `*` wildcard takes `params['*']`. This is
 * the router's reading of the target, whatever its spelling (absolute form, escapes), so
 * `JWT_SKIP_PATHS` matches against it and cannot be dodged.
 */
export function routedPath(pattern: string, params: Readonly<Record<string, unknown>>): string {
  return pattern.replace(/:([A-Za-z0-9_]+)|\*/g, (token, name: string | undefined) => {
    const value = params[name ?? '*'];
    return typeof value === 'string' ? value : token;
  });
}

/**
 * A target no route matched, read as fastify's router reads it (it can only reach the 404
 * handler): the absolute form's `scheme://authority` dropped, the query and fragment cut, and
 * percent-escapes decoded where they are valid.
 */
export function unroutedPath(url: string): string {
  let path = url.replace(/^[A-Za-z][A-Za-z0-9+.-]*:\/\/[^/?#]*/, '');
  const end = path.search(/[?#]/);
  if (end >= 0) path = path.slice(0, end);
  try {
    path = decodeURIComponent(path);
  } catch {
    // A malformed escape: keep the raw text (it routes nowhere either way).
  }
  return path === '' ? '/' : path;
}

/**
 * `JWT_SKIP_PATHS` matching (seed): an entry matches a request path exactly; an entry longer
 * than one character that ends in `/` also matches as a prefix. So `/assets/` skips everything
 * below it, while `/` skips only the root document.
 */
export function isSkippedPath(path: string, skipPaths: readonly string[]): boolean {
  return skipPaths.some(
    (entry) => path === entry || (entry.length > 1 && entry.endsWith('/') && path.startsWith(entry)),
  );
}

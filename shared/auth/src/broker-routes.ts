/**
 * The broker's route access levels: ONE prefix table (seed, "Access levels are a role set"),
 * evaluated in one place. Five levels, not ordered; see broker-access.ts for who passes which.
 */
export type AccessLevel = 'public' | 'admin' | 'read-only' | 'write-only' | 'read-write';

interface RouteRule {
  readonly level: AccessLevel;
  /** Methods the rule applies to; absent = every method. */
  readonly methods?: readonly string[];
  readonly path: string;
  readonly match: 'exact' | 'prefix';
}

/**
 * The seed's list, first match wins, in the seed's order. "Prefix" follows the seed's `*`: a
 * path under `/assets/`, anything starting with `/favicon` or `/api/v1/status`. A prefix that
 * ends in `/` also covers the bare path without it (`/internal` is admin like `/internal/x`),
 * and an exact entry also covers its trailing-slash spelling: routers commonly accept a missing
 * or extra trailing slash, and the route's real level must win.
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
  // Not in the seed (Queen has no such routes): the server kit's liveness and readiness probes,
  // public like /health so Kubernetes probes work with JWT_ENABLED=true. They reveal no data.
  { level: 'public', match: 'exact', path: '/healthz' },
  { level: 'public', match: 'exact', path: '/readyz' },
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
  { level: 'read-only', methods: ['GET'], match: 'prefix', path: '/api/v1/traces' },
  { level: 'read-only', match: 'exact', path: '/streams/v1/state/get' },
  // write-only: "POST /api/v1/push, and only that".
  { level: 'write-only', methods: ['POST'], match: 'exact', path: '/api/v1/push' },
];

/** Everything else, including any unrecognised path: read-write, never public (seed). */
export const DEFAULT_ACCESS_LEVEL: AccessLevel = 'read-write';

function ruleMatches(rule: RouteRule, method: string, path: string): boolean {
  if (rule.methods && !rule.methods.includes(method)) return false;
  // Routers commonly accept a trailing slash for the same route: classify `/x/` as `/x`.
  const trimmed = path.length > 1 && path.endsWith('/') ? path.slice(0, -1) : path;
  if (rule.match === 'exact') return trimmed === rule.path;
  return path.startsWith(rule.path) || (rule.path.endsWith('/') && trimmed === rule.path.slice(0, -1));
}

/**
 * The level a request needs. `path` should come from `normalizeRoutePath`. HEAD is classified
 * as GET: fastify answers HEAD with the GET route, so it reads exactly what GET reads.
 */
export function classifyBrokerRoute(method: string, path: string): AccessLevel {
  const upper = method.toUpperCase();
  const effectiveMethod = upper === 'HEAD' ? 'GET' : upper;
  const rule = BROKER_ROUTE_TABLE.find((candidate) => ruleMatches(candidate, effectiveMethod, path));
  return rule ? rule.level : DEFAULT_ACCESS_LEVEL;
}

/**
 * The path the router will match, so classification cannot be dodged by spelling a path
 * differently from how the router reads it: the query and fragment are dropped, percent-escapes
 * decoded as the router decodes them (`decodeURI`: `/api/v1/%73ystem/x` routes to the admin
 * `/api/v1/system/x`), and runs of slashes collapsed (routers may ignore duplicate slashes).
 */
export function normalizeRoutePath(url: string): string {
  let end = url.length;
  const query = url.indexOf('?');
  if (query >= 0) end = query;
  const fragment = url.indexOf('#');
  if (fragment >= 0 && fragment < end) end = fragment;
  let path = url.slice(0, end);
  if (path.includes('%')) {
    try {
      path = decodeURI(path);
    } catch {
      // A malformed escape: the router refuses the request itself; classify the raw text.
    }
  }
  path = path.replace(/\/{2,}/g, '/');
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

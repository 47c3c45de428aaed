import type { FastifyInstance, FastifyReply, FastifyRequest, RouteOptions } from 'fastify';
import fastifyPlugin from 'fastify-plugin';
import { hasAccess } from './broker-access.js';
import { type BrokerIdentity, createBrokerAuthenticator, EMPTY_IDENTITY } from './broker-authenticator.js';
import {
  type AccessLevel,
  DEFAULT_ACCESS_LEVEL,
  isAccessLevel,
  isSkippedPath,
  routedPath,
  unroutedPath,
} from './broker-routes.js';
import { type BrokerAuthConfig, validateBrokerAuthConfig } from './broker-settings.js';
import { AuthError, type AuthFailureReason, isAuthError } from './errors.js';
import type { AuthLogger } from './logger.js';
import type { RevocationCheck } from './revocation.js';

declare module 'fastify' {
  interface FastifyRequest {
    /** Set by the broker auth plugin before any handler runs. */
    identity: BrokerIdentity;
  }
  interface FastifyContextConfig {
    /**
     * The broker access level of this route, declared where the route is registered: the level
     * belongs to the route the router matched, not to a spelling of the URL (issue #8).
     */
    access?: AccessLevel;
  }
}

export interface BrokerAuthPluginOptions {
  readonly settings: BrokerAuthConfig;
  /** Defaults to the fastify instance's logger. */
  readonly logger?: AuthLogger | undefined;
  /** Called with the reason of every refused request (`herald_broker_auth_failures_total`). */
  readonly onFailure?: ((reason: AuthFailureReason) => void) | undefined;
  readonly now?: (() => number) | undefined;
  /** The node's deny list, handed to the authenticator (docs/security.md, "Revocation"). */
  readonly revocations?: RevocationCheck | undefined;
}

/**
 * RFC 6750 §3: every refusal names the Bearer scheme; a request without a token gets no `error`
 * attribute (§3.1), a bad token `invalid_token`, a valid token without the role
 * `insufficient_scope`. Server-side key problems (5xx) are not a challenge.
 */
export function bearerChallenge(error: AuthError): string | undefined {
  if (error.status === 403) return 'Bearer error="insufficient_scope"';
  if (error.status !== 401) return undefined;
  return error.reason === 'missing_token' ? 'Bearer' : 'Bearer error="invalid_token"';
}

/**
 * The broker's error shape (seed): `{"error":"…"}` with `content-type: application/json`. Sent
 * as bytes: fastify would append `; charset=utf-8` to the header for a string body.
 */
function refuse(reply: FastifyReply, error: AuthError): FastifyReply {
  const challenge = bearerChallenge(error);
  if (challenge) reply.header('www-authenticate', challenge);
  return reply
    .code(error.status)
    .header('content-type', 'application/json')
    .send(Buffer.from(JSON.stringify({ error: error.message })));
}

/**
 * A route registered without `config.access` would silently take the default level; refuse it
 * at registration instead, so a new route cannot ship without a decision (issue #8).
 */
export function requireDeclaredAccess(route: RouteOptions): void {
  if (isAccessLevel(route.config?.access)) return;
  const methods = Array.isArray(route.method) ? route.method.join(',') : route.method;
  throw new TypeError(
    `broker route ${methods} ${route.url} declares no access level: register it with { config: { access } }`,
  );
}

/**
 * The level a request needs and the path it was routed to. A matched route's own declaration
 * wins; a request no route matched can only reach the 404 handler and is read-write (seed:
 * unknown routes are never public).
 */
function routeOf(request: FastifyRequest): { level: AccessLevel; path: string } {
  if (request.is404) return { level: DEFAULT_ACCESS_LEVEL, path: unroutedPath(request.url) };
  const { url, config } = request.routeOptions;
  return {
    level: config.access ?? DEFAULT_ACCESS_LEVEL,
    path: routedPath(url ?? '/', request.params as Record<string, unknown>),
  };
}

async function brokerAuth(fastify: FastifyInstance, options: BrokerAuthPluginOptions): Promise<void> {
  const { settings } = options;
  // Boot validation is fatal (seed): a ConfigError here fails registration, so `listen` never
  // binds.
  validateBrokerAuthConfig(settings);
  fastify.decorateRequest('identity', null as unknown as BrokerIdentity);
  // Checked with auth on or off: the declarations are part of the code, not of the deployment.
  fastify.addHook('onRoute', requireDeclaredAccess);

  if (!settings.JWT_ENABLED) {
    // Seed: with auth off, every request gets an empty identity; no header is read.
    fastify.addHook('onRequest', async (request: FastifyRequest) => {
      request.identity = EMPTY_IDENTITY;
    });
    return;
  }

  const logger: AuthLogger = options.logger ?? fastify.log;
  const authenticator = createBrokerAuthenticator(settings, {
    logger,
    now: options.now,
    revocations: options.revocations,
  });
  await authenticator.ready();
  fastify.addHook('onClose', async () => authenticator.close());
  const skipPaths = settings.JWT_SKIP_PATHS;

  fastify.addHook('onRequest', async (request: FastifyRequest, reply: FastifyReply) => {
    request.identity = EMPTY_IDENTITY;
    const { level, path } = routeOf(request);
    // Skips first: an entry here overrides the route's level (seed).
    if (isSkippedPath(path, skipPaths)) return;
    if (level === 'public') return;
    try {
      const identity = await authenticator.authenticate(request.headers.authorization);
      if (!hasAccess(identity.roles, level, authenticator.roleNames)) throw new AuthError('forbidden');
      request.identity = identity;
    } catch (error) {
      if (!isAuthError(error)) throw error;
      options.onFailure?.(error.reason);
      // The reason and the route, never the token.
      const fields = { reason: error.reason, method: request.method, path, level };
      if (error.status >= 500) logger.error(fields, 'broker authentication failed on the server side');
      else logger.info(fields, 'request refused by broker authentication');
      return refuse(reply, error);
    }
  });
}

/**
 * The broker's authentication as a fastify plugin (encapsulation broken with fastify-plugin so
 * the hooks cover every route of the parent). Decorates `request.identity`. Every route
 * registered after it must declare `config.access`; routes registered before it (the server
 * kit's probes and metrics) must be given one too, or they take the default level.
 */
export const brokerAuthPlugin = fastifyPlugin(brokerAuth, {
  name: '@herald/auth-broker',
  fastify: '5.x',
});

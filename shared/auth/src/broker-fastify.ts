import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import fastifyPlugin from 'fastify-plugin';
import { hasAccess } from './broker-access.js';
import { type BrokerIdentity, createBrokerAuthenticator, EMPTY_IDENTITY } from './broker-authenticator.js';
import { classifyBrokerRoute, isSkippedPath, normalizeRoutePath } from './broker-routes.js';
import { type BrokerAuthConfig, validateBrokerAuthConfig } from './broker-settings.js';
import { AuthError, type AuthFailureReason, isAuthError } from './errors.js';
import type { AuthLogger } from './logger.js';

declare module 'fastify' {
  interface FastifyRequest {
    /** Set by the broker auth plugin before any handler runs. */
    identity: BrokerIdentity;
  }
}

export interface BrokerAuthPluginOptions {
  readonly settings: BrokerAuthConfig;
  /** Defaults to the fastify instance's logger. */
  readonly logger?: AuthLogger | undefined;
  /** Called with the reason of every refused request (`herald_broker_auth_failures_total`). */
  readonly onFailure?: ((reason: AuthFailureReason) => void) | undefined;
  readonly now?: (() => number) | undefined;
}

/**
 * The broker's error shape (seed): `{"error":"…"}` with `content-type: application/json`. Sent
 * as bytes: fastify would append `; charset=utf-8` to the header for a string body.
 */
function refuse(reply: FastifyReply, error: AuthError): FastifyReply {
  return reply
    .code(error.status)
    .header('content-type', 'application/json')
    .send(Buffer.from(JSON.stringify({ error: error.message })));
}

async function brokerAuth(fastify: FastifyInstance, options: BrokerAuthPluginOptions): Promise<void> {
  const { settings } = options;
  // Boot validation is fatal (seed): a ConfigError here fails registration, so `listen` never
  // binds.
  validateBrokerAuthConfig(settings);
  fastify.decorateRequest('identity', null as unknown as BrokerIdentity);

  if (!settings.JWT_ENABLED) {
    // Seed: with auth off, every request gets an empty identity; no header is read.
    fastify.addHook('onRequest', async (request: FastifyRequest) => {
      request.identity = EMPTY_IDENTITY;
    });
    return;
  }

  const logger: AuthLogger = options.logger ?? fastify.log;
  const authenticator = createBrokerAuthenticator(settings, { logger, now: options.now });
  await authenticator.ready();
  fastify.addHook('onClose', async () => authenticator.close());
  const skipPaths = settings.JWT_SKIP_PATHS;

  fastify.addHook('onRequest', async (request: FastifyRequest, reply: FastifyReply) => {
    request.identity = EMPTY_IDENTITY;
    const path = normalizeRoutePath(request.url);
    // Skips first: an entry here overrides the route table (seed).
    if (isSkippedPath(path, skipPaths)) return;
    const level = classifyBrokerRoute(request.method, path);
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
 * the hook covers every route of the parent). Decorates `request.identity`.
 */
export const brokerAuthPlugin = fastifyPlugin(brokerAuth, {
  name: '@herald/auth-broker',
  fastify: '5.x',
});

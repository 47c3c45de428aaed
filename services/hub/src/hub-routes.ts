import { installErrorHandler } from '@herald/http';
import type { FastifyInstance } from 'fastify';
import { handleSubscriptionsApi, SUBSCRIPTIONS_PATH } from './active-subscriptions.js';
import { registerHubAdminRoutes } from './admin.js';
import { bearerChallenge, bearerErrorOf } from './challenge.js';
import { corsCredentials } from './config.js';
import { registerCors } from './cors.js';
import { asHubError, HubError } from './errors.js';
import type { Hub } from './hub.js';
import { HUB_PATH, RESOURCE_METADATA_PATH } from './identity.js';
import { authorizePublisher, handlePublish, PUBLISH_BODY_LIMIT } from './publish.js';
import { handleResourceMetadata } from './resource-metadata.js';
import { handleSubscribe } from './subscribe.js';
import { registerHome } from './ui/home.js';
import { registerDevUi } from './ui/routes.js';

/**
 * The hub's HTTP edge: the error handler (typed errors to their status and a plain-text body,
 * with the Bearer challenge of RFC 6750), CORS, the form body parser, and the routes, each
 * handing its request to `hub`.
 */
export function registerHubRoutes(app: FastifyInstance, hub: Hub): void {
  const { config } = hub;
  installErrorHandler(app, {
    format: 'text',
    map: asHubError,
    onAnswer: (error, reply) => {
      // AuthErrors are counted by the authenticator's onFailure; these are the hub's own refusals.
      if (error instanceof HubError && error.authReason)
        hub.metrics.authFailures.inc({ reason: error.authReason });
      const bearerError = bearerErrorOf(error);
      if (bearerError !== undefined)
        reply.header('www-authenticate', bearerChallenge(bearerError, hub.identity.resourceMetadataUrl));
    },
    logRefusal: (request, { status, code, message }) => request.log.info({ status, code }, message),
  });

  registerCors(app, {
    origins: config.MERCURE_CORS_ORIGINS,
    credentials: corsCredentials(config),
  });
  app.addContentTypeParser(
    'application/x-www-form-urlencoded',
    { parseAs: 'string', bodyLimit: PUBLISH_BODY_LIMIT },
    (_request, body, done) => done(null, body),
  );
  const subscribe = hub.subscribeDependencies;
  const publish = hub.publishDependencies;
  app.get(HUB_PATH, (request, reply) => handleSubscribe(subscribe, request, reply));
  app.get(RESOURCE_METADATA_PATH, (_request, reply) => handleResourceMetadata(hub.identity, config, reply));
  app.post(HUB_PATH, { onRequest: (request) => authorizePublisher(publish, request) }, (request, reply) =>
    handlePublish(publish, request, reply),
  );
  if (config.MERCURE_SUBSCRIPTIONS) {
    const subscriptions = { auth: hub.auth, transport: hub.transport, identity: hub.identity };
    for (const suffix of ['', '/:matchType', '/:matchType/:match', '/:matchType/:match/:subscriber']) {
      app.get(`${SUBSCRIPTIONS_PATH}${suffix}`, (request, reply) =>
        handleSubscriptionsApi(subscriptions, request as Parameters<typeof handleSubscriptionsApi>[1], reply),
      );
    }
  }
  registerHubAdminRoutes(app, {
    auth: hub.auth,
    revocations: hub.revocations,
    applyRevocations: () => hub.revocationWatcher.refresh(),
    clock: hub.clock,
  });
  hub.limits.registerRoutes(app, hub.auth);
  if (config.MERCURE_DEV) registerDevUi(app);
  registerHome(app, { dev: config.MERCURE_DEV, subscriptions: config.MERCURE_SUBSCRIPTIONS });
}

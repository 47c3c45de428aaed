import { MATCHER_TYPES, MERCURE_DETAIL_TYPES } from '@herald/auth';
import type { FastifyReply } from 'fastify';
import type { HubConfig } from './config.js';
import type { HubIdentity } from './identity.js';

/**
 * OAuth 2.0 Protected Resource Metadata (RFC 9728) for the hub, with the Mercure draft's
 * members. Only what the hub truly does is listed:
 *
 * - `bearer_methods_supported`: the RFC 6750 methods the hub reads, `header` and `query` (the
 *   `authorization` and `access_token` parameters). Not `body`: the publish form's
 *   `access_token` field is not read. The cookie is no RFC 6750 method, hence `mercure_cookie`.
 * - no `authorization_servers`: the hub does not know who issues its tokens (it is configured
 *   with keys, not issuers' metadata), and no `jwks_uri`: it hosts no key set.
 */
export interface ResourceMetadata {
  readonly resource: string;
  readonly bearer_methods_supported: readonly string[];
  readonly authorization_details_types_supported: readonly string[];
  readonly mercure_cookie: string;
  readonly mercure_matcher_types_supported: readonly string[];
  readonly mercure_subscriptions?: true;
}

export function resourceMetadata(
  identity: Pick<HubIdentity, 'hubUrl'>,
  config: Pick<HubConfig, 'MERCURE_COOKIE_NAME' | 'MERCURE_SUBSCRIPTIONS'>,
): ResourceMetadata {
  return {
    // RFC 9728 §3.3: the same identifier the metadata URL was derived from (hub URL).
    resource: identity.hubUrl,
    bearer_methods_supported: ['header', 'query'],
    authorization_details_types_supported: [...MERCURE_DETAIL_TYPES],
    mercure_cookie: config.MERCURE_COOKIE_NAME,
    // The draft names matcher types in lower case and compares them case-insensitively.
    mercure_matcher_types_supported: MATCHER_TYPES.map((type) => type.toLowerCase()),
    ...(config.MERCURE_SUBSCRIPTIONS ? { mercure_subscriptions: true as const } : {}),
  };
}

/** GET /.well-known/oauth-protected-resource/.well-known/mercure. */
export function handleResourceMetadata(
  identity: Pick<HubIdentity, 'hubUrl'>,
  config: Pick<HubConfig, 'MERCURE_COOKIE_NAME' | 'MERCURE_SUBSCRIPTIONS'>,
  reply: FastifyReply,
): FastifyReply {
  return reply
    .header('cache-control', 'public, max-age=3600')
    .type('application/json')
    .send(JSON.stringify(resourceMetadata(identity, config)));
}

import {
  canPublish,
  canReceive,
  compileLegacySelector,
  compileTopicSelector,
  createMercureAuthenticator,
  type MercureAuthenticator,
  type RevocationCheck,
  selectPayload,
  type TopicSelector,
  transportFactsOf,
} from '@herald/auth';
import type { FastifyBaseLogger, FastifyRequest } from 'fastify';
import { carriesAdminClaim } from './admin.js';
import type { HubConfig } from './config.js';
import type { Principal } from './principal.js';
import { queryParameters } from './query.js';

export type TokenRole = 'publisher' | 'subscriber';

/**
 * The hub's seam onto `@herald/auth` (auth.md, hub profile): token sources and the HTTPS rule,
 * verification, claims, and the topic matchers, which the subscribe `match*` parameters use too
 * so a pattern means the same thing in a query and in a claim.
 */
export class HubAuthorization {
  private readonly authenticator: MercureAuthenticator;
  private readonly baseUrl: string | undefined;

  constructor(
    private readonly config: HubConfig,
    logger: FastifyBaseLogger,
    onFailure: (reason: string) => void,
    /** The node's deny list: a revoked token is refused like an invalid one (401). */
    private readonly revocations: RevocationCheck,
  ) {
    this.baseUrl = config.MERCURE_PUBLIC_URL?.href;
    this.authenticator = createMercureAuthenticator(config, {
      ...(this.baseUrl ? { hubUrl: this.baseUrl } : {}),
      logger,
      onFailure,
      revocations,
    });
  }

  /**
   * Compiles one subscribe matcher; AuthError 501 for an unknown type, 400 for a bad pattern or
   * one past the compile bounds (docs/hub.md, "Limits"). Patterns come from the query string, so
   * call this only once the request is authenticated (or anonymous access is allowed).
   */
  compileMatcher(match: string, matchType: string, legacy = false): TopicSelector {
    if (legacy) return compileLegacySelector(match);
    return compileTopicSelector(match, matchType, this.baseUrl ? { baseUrl: this.baseUrl } : undefined);
  }

  /**
   * The request's principal, or undefined when it carries no token (anonymous). Rejects with an
   * AuthError for an invalid token, or for any token over an insecure transport.
   */
  async authenticate(request: FastifyRequest, role: TokenRole): Promise<Principal | undefined> {
    const result = await this.authenticator.authenticate(
      {
        headers: request.headers,
        query: queryParameters(request.url),
        transport: transportFactsOf(request, { devMode: this.config.MERCURE_DEV }),
      },
      role,
    );
    if (!result.claims || !result.source) return undefined;
    return {
      claims: result.claims,
      tokenSource: result.source,
      expiresAt: result.expiresAt,
      tokenId: result.tokenId,
      subject: result.subject,
      issuedAt: result.issuedAt,
      admin: carriesAdminClaim(result.payload),
    };
  }

  /** Whether the deny list now covers this principal's token (an open stream's, checked on change). */
  isRevoked(principal: Principal): boolean {
    return this.revocations.isRevoked({
      jti: principal.tokenId,
      sub: principal.subject,
      iat: principal.issuedAt,
    });
  }

  mayPublish(principal: Principal, topics: readonly string[]): boolean {
    return canPublish(principal.claims, topics);
  }

  hasPublishClaim(principal: Principal): boolean {
    return principal.claims.publish.length > 0;
  }

  canReceive(principal: Principal | undefined, topics: readonly string[]): boolean {
    return canReceive(principal?.claims, topics);
  }

  selectPayload(principal: Principal | undefined, matchType: string, match: string): unknown {
    return selectPayload(principal?.claims, { matchType, match });
  }

  ready(): Promise<void> {
    return this.authenticator.ready();
  }

  close(): void {
    this.authenticator.close();
  }
}

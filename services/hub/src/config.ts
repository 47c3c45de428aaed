import { mercureAuthSettings } from '@herald/auth';
import {
  boolean,
  type ConfigOf,
  duration,
  type Environment,
  integer,
  list,
  parseEnv,
  port,
  string,
  url,
} from '@herald/config';
import { httpSettings } from '@herald/http';
import { redisSettings, redisTopologyFrom } from '@herald/redis';
import { HUB_PATH } from './identity.js';

/**
 * Every environment variable the hub reads (docs/hub.md lists them with their defaults).
 * Names follow the reference hub's where it has one (hub.md, configuration).
 */
export const hubSpec = {
  ...httpSettings(8080),
  /**
   * REDIS_URL, REDIS_SENTINELS (+ REDIS_SENTINEL_MASTER…), REDIS_CLUSTER_NODES, REDIS_USERNAME,
   * REDIS_PASSWORD, REDIS_TLS: one definition for both services, in @herald/redis. None set: the
   * in-process backend (single node only; logged loudly at start).
   */
  ...redisSettings,
  /**
   * MERCURE_{PUBLISHER,SUBSCRIBER}_{JWT_KEY,JWT_ALG,JWKS_URL}, MERCURE_LEGACY_CLAIMS,
   * MERCURE_COOKIE_NAME, MERCURE_JWT_ISSUERS, MERCURE_JWT_AUDIENCE: one definition, in @herald/auth.
   */
  ...mercureAuthSettings,
  /** Accept subscribers without a token (public updates only). */
  MERCURE_ANONYMOUS: boolean({ default: false }),
  /** Development mode: anonymous subscribers, loopback peers treated as secure, the dev UI. */
  MERCURE_DEV: boolean({ default: false }),
  /** Publish subscription events and serve the active subscriptions API. */
  MERCURE_SUBSCRIPTIONS: boolean({ default: false }),
  /**
   * Each event of a `match*` subscription carries `topics` fields: the update's topics the
   * subscriber may see (private updates: those its token allows), the field proposed upstream for
   * the protocol's next revision (docs/hub.md, "The topics field"). Off by default.
   */
  MERCURE_TOPICS_FIELD: boolean({ default: false }),
  /** How long a node's claim on its subscription entries lives without renewal (cluster). */
  MERCURE_SUBSCRIPTIONS_LEASE: duration({ default: 15_000, min: 1000 }),
  /**
   * Limits per tenant (docs/hub.md, "Limits per tenant"), cluster-wide; unset: off for every
   * tenant without an override (/herald/admin/limits sets those). Streams one subscriber subject
   * (the token's `sub`, else the client address) may hold open at once, cluster-wide.
   */
  MERCURE_LIMIT_SUBSCRIPTIONS: integer({ min: 0, max: 1_000_000_000 }),
  /** Updates one publisher (`sub`, else the client address) may publish per second. */
  MERCURE_LIMIT_PUBLISH_RATE: integer({ min: 0, max: 1_000_000_000 }),
  /** How long a node's stream slots count without a renewal: a killed node's free after it. */
  MERCURE_LIMIT_LEASE: duration({ default: 30_000, min: 3000, max: 3_600_000 }),
  MERCURE_CORS_ORIGINS: list({ default: [] }),
  /** Default: true with explicit origins, false with `*`; true together with `*` is refused. */
  MERCURE_CORS_CREDENTIALS: boolean(),
  MERCURE_PUBLISH_ORIGINS: list({ default: [] }),
  /** Comment sent on idle streams; 0 disables. */
  MERCURE_HEARTBEAT: duration({ default: 40_000 }),
  /** Maximum connection lifetime (each connection gets 80-100 % of it); 0 disables. */
  MERCURE_WRITE_TIMEOUT: duration({ default: 600_000 }),
  /** A write blocked longer than this closes the subscriber. */
  MERCURE_DISPATCH_TIMEOUT: duration({ default: 5000, min: 1 }),
  MERCURE_MAX_CONNECTION_QUEUE_BYTES: integer({ default: 1024 * 1024, min: 1024 }),
  MERCURE_MAX_CONNECTION_QUEUE_EVENTS: integer({ default: 10_000, min: 1 }),
  /** Bound of each partition's history, in entries. */
  MERCURE_HISTORY_SIZE: integer({ default: 10_000, min: 1 }),
  /**
   * Topic partitions of the Redis history and fan-out (docs/hub.md, topic partitions); every node
   * must use the same value. The in-process backend has one whatever this says.
   */
  MERCURE_PARTITIONS: integer({ default: 1, min: 1, max: 1024 }),
  /** Age bound of history entries; 0 keeps entries until the size bound trims them. */
  MERCURE_HISTORY_TTL: duration({ default: 86_400_000 }),
  MERCURE_DRAIN_WINDOW: duration({ default: 10_000 }),
  /**
   * A second port speaking cleartext HTTP/2 (h2c, prior knowledge) for a proxy that reaches the
   * hub over HTTP/2: its subscribers' streams share a few connections (docs/hub.md, "HTTP/2").
   * Unset: none. 0 picks a free port (tests).
   */
  MERCURE_H2C_PORT: port(),
  /** Streams one h2c connection may hold open at once (SETTINGS_MAX_CONCURRENT_STREAMS). */
  MERCURE_H2C_MAX_STREAMS: integer({ default: 1000, min: 1, max: 2_147_483_647 }),
  /**
   * With TLS_CERT_FILE: the main port also speaks HTTP/2, chosen by ALPN, so a browser's
   * subscriptions share one connection instead of counting against its six per origin
   * (docs/hub.md, "HTTP/2 on the TLS port"). Off: HTTP/1.1 only.
   */
  MERCURE_TLS_HTTP2: boolean({ default: true }),
  /** Redis key and channel prefix; all keys share one hash tag so scripts work on a cluster. */
  MERCURE_REDIS_PREFIX: string({ default: 'herald:hub:' }),
  /**
   * Public URL of the hub (`https://hub.example.com/.well-known/mercure`): base URL of relative
   * URL patterns, the URL subscriptions API claims are checked against, the RFC 9728 resource and
   * its metadata URL. Unset: the fixed `http://mercure.invalid/.well-known/mercure`, never a
   * request's Host (docs/hub.md, "The hub's URL").
   */
  MERCURE_PUBLIC_URL: url({ protocols: ['https:', 'http:'] }),
};

export type HubConfig = ConfigOf<typeof hubSpec>;

/** Parses and validates the hub's settings; cross-field rules throw a ConfigError too. */
export function parseHubConfig(environment: Environment): HubConfig {
  const config = parseEnv(hubSpec, environment, { ownedPrefixes: ['MERCURE_'] });
  validateHubConfig(config);
  return config;
}

export class HubConfigError extends Error {
  override readonly name = 'ConfigError';
  constructor(
    readonly variable: string,
    reason: string,
  ) {
    super(`${variable}: ${reason}`);
  }
}

export function validateHubConfig(config: HubConfig): void {
  // Exactly one Redis topology, or none (throws a ConfigError naming the variable).
  redisTopologyFrom(config);
  if (
    config.MERCURE_H2C_PORT !== undefined &&
    config.MERCURE_H2C_PORT !== 0 &&
    config.MERCURE_H2C_PORT === config.PORT
  ) {
    throw new HubConfigError('MERCURE_H2C_PORT', 'must differ from PORT: the main port speaks HTTP/1.1');
  }
  const wildcard = config.MERCURE_CORS_ORIGINS.includes('*');
  if (wildcard && config.MERCURE_CORS_CREDENTIALS === true) {
    // Browsers refuse `*` with credentials; allowing any origin with cookies would be a CSRF hole.
    throw new HubConfigError('MERCURE_CORS_CREDENTIALS', 'credentials cannot be allowed with origin `*`');
  }
  if (wildcard && config.MERCURE_CORS_ORIGINS.length > 1) {
    throw new HubConfigError('MERCURE_CORS_ORIGINS', '`*` cannot be combined with explicit origins');
  }
  const publicUrl = config.MERCURE_PUBLIC_URL;
  if (publicUrl && (!publicUrl.pathname.endsWith(HUB_PATH) || publicUrl.search || publicUrl.hash)) {
    // It is the hub's identity (the RFC 9728 resource, the URL claims are checked against): an
    // origin alone would name another resource, so say so at boot rather than guess.
    throw new HubConfigError(
      'MERCURE_PUBLIC_URL',
      `must be the hub's full URL, ending with ${HUB_PATH} and without query or fragment (e.g. https://hub.example.com${HUB_PATH})`,
    );
  }
}

/** Whether CORS responses may carry credentials (cookies). */
export function corsCredentials(config: HubConfig): boolean {
  if (config.MERCURE_CORS_ORIGINS.includes('*')) return false;
  return config.MERCURE_CORS_CREDENTIALS ?? config.MERCURE_CORS_ORIGINS.length > 0;
}

// Common core

export {
  ASYMMETRIC_ALGORITHMS,
  algorithmFitsKey,
  EC_ALGORITHMS,
  EDDSA_ALGORITHMS,
  HMAC_ALGORITHMS,
  isSupportedAlgorithm,
  type JwsAlgorithm,
  type KeyFamily,
  keyFamilyOf,
  RSA_ALGORITHMS,
  SUPPORTED_ALGORITHMS,
} from './algorithms.js';
export {
  type BrokerRoleNames,
  DEFAULT_ROLE_NAMES,
  hasAccess,
  type RoleClaimNames,
  rolesFromClaims,
} from './broker-access.js';
export {
  BROKER_ACCEPTED_ALGORITHMS,
  type BrokerAuthenticator,
  type BrokerAuthenticatorOptions,
  type BrokerIdentity,
  bearerToken,
  createBrokerAuthenticator,
  EMPTY_IDENTITY,
} from './broker-authenticator.js';
export { type BrokerAuthPluginOptions, brokerAuthPlugin, requireDeclaredAccess } from './broker-fastify.js';
export {
  ACCESS_LEVELS,
  type AccessLevel,
  BROKER_ROUTE_TABLE,
  classifyBrokerRoute,
  DEFAULT_ACCESS_LEVEL,
  isAccessLevel,
  isSkippedPath,
  routedPath,
  unroutedPath,
} from './broker-routes.js';
// Broker profile
export {
  BROKER_JWT_ALGORITHMS,
  type BrokerAuthConfig,
  type BrokerJwtAlgorithm,
  brokerAuthSettings,
  DEFAULT_SKIP_PATHS,
  validateBrokerAuthConfig,
} from './broker-settings.js';
export {
  AUTH_FAILURE_REASONS,
  AuthError,
  type AuthErrorCode,
  type AuthErrorStatus,
  type AuthFailureReason,
  isAuthError,
  RevocationsFullError,
} from './errors.js';
export {
  fetchJwksDocument,
  JWKS_DEFAULT_MAX_AGE_MS,
  JWKS_DEFAULT_TIMEOUT_MS,
  JWKS_MAX_BYTES,
  JWKS_REFETCH_INTERVAL_MS,
  JwksCache,
  type JwksCacheOptions,
  JwksFetchError,
} from './jwks.js';
export {
  importJwk,
  importPublicKeyPem,
  importSecret,
  isPemText,
  type JwkKeyType,
  KeyImportError,
  normalizePem,
  type VerificationKey,
} from './keys.js';
export { type AuthLogger, silentLogger } from './logger.js';
// Topic selectors (shared with the hub's subscribe matchers)
export {
  compileLegacySelector,
  compileTopicSelector,
  FALLBACK_BASE_URL,
  MATCHER_TYPES,
  MAX_PATTERN_BYTES,
  MAX_PATTERN_TOPIC_LENGTH,
  type MatcherType,
  resolveMatcherType,
  SELECTOR_CACHE_BYTES,
  type SelectorCacheStats,
  type SelectorOptions,
  selectorCacheStats,
  type TopicSelector,
  WILDCARD,
} from './matchers.js';
export {
  DFA_BUDGET_BYTES,
  MAX_NESTING_DEPTH,
  MAX_PROGRAM_SIZE,
  MAX_REPEAT_COUNT,
  PATTERN_WORK_CHANNEL,
  type PatternWork,
} from './matchers-re2.js';
export { canPublish, canReceive, type SubscriptionMatcher, selectPayload } from './mercure-access.js';
export {
  createMercureAuthenticator,
  type MercureAuthenticator,
  type MercureAuthenticatorOptions,
  type MercureAuthRequest,
  type MercureAuthResult,
} from './mercure-authenticator.js';
// Hub (Mercure) profile
export {
  MAX_SELECTORS_PER_TOKEN,
  MERCURE_DETAIL_TYPES,
  type MercureClaimEntry,
  type MercureClaims,
  type MercureClaimsGrammar,
  type ParseMercureClaimsOptions,
  parseMercureClaims,
} from './mercure-claims.js';
export {
  DEFAULT_COOKIE_NAME,
  type ExtractedToken,
  extractMercureToken,
  isLoopbackAddress,
  isSecureTransport,
  QUERY_PARAMETER,
  RFC6750_QUERY_PARAMETER,
  type TokenCarrier,
  type TokenSource,
  type TransportFacts,
  type TransportRequest,
  tokenSourceOf,
  transportFactsOf,
} from './mercure-request.js';
export {
  type MercureAuthConfig,
  type MercureRole,
  type MercureRoleKeys,
  mercureAuthSettings,
  resolveMercureRoleKeys,
} from './mercure-settings.js';
export {
  DenyList,
  InvalidRevocationError,
  isExpiredRevocation,
  MAX_REVOCATION_ID_LENGTH,
  parseRevocationEntry,
  type RevocableToken,
  type RevocationCheck,
  type RevocationEntry,
  revocableTokenOf,
  revocationFromRequest,
  revocationId,
} from './revocation.js';
export {
  TOKEN_CACHE_DEFAULT_ENTRIES,
  TOKEN_CACHE_DEFAULT_TTL_MS,
  type TokenCacheOptions,
  VerifiedTokenCache,
} from './token-cache.js';
export {
  createTokenVerifier,
  DEFAULT_MAX_TOKEN_LENGTH,
  type KeyResolver,
  TokenVerifier,
  type TokenVerifierOptions,
  type VerifiedToken,
} from './verify.js';

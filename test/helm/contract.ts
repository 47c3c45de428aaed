// Names fixed by docs/contracts.md that the chart must agree with.

import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { redisSettings } from '@herald/redis';
import { repoRoot } from './helm.js';

/**
 * Metric names listed under "## Metric names" in docs/contracts.md (labels stripped). Read from the
 * document itself, so a renamed metric fails the chart tests until rules and dashboard follow.
 */
export function contractMetricNames(): Set<string> {
  const text = readFileSync(join(repoRoot, 'docs', 'contracts.md'), 'utf8');
  const start = text.indexOf('## Metric names');
  if (start < 0) throw new Error('docs/contracts.md has no "## Metric names" section');
  const next = text.indexOf('\n## ', start + 1);
  const section = text.slice(start, next < 0 ? undefined : next);
  const names = new Set<string>();
  for (const [, code] of section.matchAll(/`([^`]+)`/g)) {
    const name = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{[^}]*\})?$/.exec(code ?? '')?.[1];
    if (name) names.add(name);
  }
  if (names.size < 10) throw new Error(`only ${names.size} metric names found in docs/contracts.md`);
  return names;
}

const HISTOGRAM_SUFFIXES = ['_bucket', '_sum', '_count'] as const;

/** The contract metric a series name belongs to: itself, or a histogram's base name. */
export function contractMetricFor(series: string, contract: ReadonlySet<string>): string | undefined {
  if (contract.has(series)) return series;
  for (const suffix of HISTOGRAM_SUFFIXES) {
    if (series.endsWith(suffix) && contract.has(series.slice(0, -suffix.length))) {
      return series.slice(0, -suffix.length);
    }
  }
  return undefined;
}

/**
 * Environment variables the services read. Both parse their environment with ownedPrefixes
 * (`MERCURE_`, `JWT_`, `BROKER_`), so an unknown name under those prefixes stops the process at boot: the
 * chart must never render one. Sources: docs/contracts.md ("Environment variables"), the hub's
 * configuration table of docs/hub.md and the broker's JWT_* names (docs/auth.md, "Broker
 * profile").
 */
export const serviceEnvNames = {
  common: [
    'PORT',
    'HOST',
    'TLS_CERT_FILE',
    'TLS_KEY_FILE',
    'TRUSTED_PROXIES',
    'LOG_LEVEL',
    'SHUTDOWN_TIMEOUT',
    // REDIS_URL, REDIS_SENTINELS, REDIS_CLUSTER_NODES…: the one Redis spec both services spread.
    ...Object.keys(redisSettings),
  ],
  hub: [
    'MERCURE_PUBLISHER_JWT_KEY',
    'MERCURE_PUBLISHER_JWT_ALG',
    'MERCURE_SUBSCRIBER_JWT_KEY',
    'MERCURE_SUBSCRIBER_JWT_ALG',
    'MERCURE_PUBLISHER_JWKS_URL',
    'MERCURE_SUBSCRIBER_JWKS_URL',
    'MERCURE_ANONYMOUS',
    'MERCURE_DEV',
    'MERCURE_SUBSCRIPTIONS',
    'MERCURE_CORS_ORIGINS',
    'MERCURE_PUBLISH_ORIGINS',
    'MERCURE_COOKIE_NAME',
    'MERCURE_HEARTBEAT',
    'MERCURE_WRITE_TIMEOUT',
    'MERCURE_DISPATCH_TIMEOUT',
    'MERCURE_HISTORY_SIZE',
    'MERCURE_HISTORY_TTL',
    'MERCURE_LEGACY_CLAIMS',
    'MERCURE_DRAIN_WINDOW',
    'MERCURE_MAX_CONNECTION_QUEUE_BYTES',
    'MERCURE_PUBLIC_URL',
    'MERCURE_TOPICS_FIELD',
    'MERCURE_LIMIT_SUBSCRIPTIONS',
    'MERCURE_LIMIT_PUBLISH_RATE',
    'MERCURE_LIMIT_LEASE',
  ],
  broker: [
    'JWT_ENABLED',
    'JWT_ALGORITHM',
    'JWT_SECRET',
    'JWT_PUBLIC_KEY',
    'JWT_JWKS_URL',
    'JWT_CLOCK_SKEW',
    'JWT_ISSUER',
    'JWT_AUDIENCE',
    'JWT_ROLES_CLAIM',
    'JWT_ROLES_ARRAY_CLAIM',
    'JWT_ROLE_ADMIN',
    'JWT_ROLE_READ_WRITE',
    'JWT_ROLE_READ_ONLY',
    'JWT_ROLE_WRITE_ONLY',
    'JWT_SKIP_PATHS',
    'DEFAULT_BATCH_SIZE',
    'DEFAULT_TIMEOUT',
    'BROKER_METRICS_MAX_QUEUES',
    'BROKER_BODY_LIMIT_BYTES',
    'BROKER_MAX_PAYLOAD_BYTES',
    'BROKER_BODY_BUDGET_BYTES',
    'BROKER_BODY_BUDGET_WAIT',
    'BROKER_MIN_REPLICAS_ACK',
    'BROKER_MIN_REPLICAS_ACK_TIMEOUT',
    'QUEEN_ENCRYPTION_KEY',
    'QUEEN_ENCRYPTION_OLD_KEYS',
    'BROKER_LIMIT_TENANT',
    'BROKER_LIMIT_PUSH_RATE',
    'BROKER_LIMIT_IN_FLIGHT',
    'BROKER_HUB_URL',
    'BROKER_HUB_JWT_KEY',
    'BROKER_HUB_JWT_ALG',
    // Read by Node itself, not the broker: broker.nodeOptions (docs/benchmarks.md, "Broker footprint").
    'NODE_OPTIONS',
  ],
} as const;

import {
  boolean,
  ConfigError,
  type ConfigOf,
  duration,
  integer,
  list,
  type Setting,
  string,
  url,
} from '@herald/config';

/**
 * `JWT_ALGORITHM` values (seed, "Algorithms and auto-detection"). The value names the SET of
 * algorithms a token may declare, not one algorithm.
 */
export const BROKER_JWT_ALGORITHMS = [
  'HS256',
  'HS384',
  'HS512',
  'RS256',
  'RS384',
  'RS512',
  'EdDSA',
  'auto',
] as const;
export type BrokerJwtAlgorithm = (typeof BROKER_JWT_ALGORITHMS)[number];

export const DEFAULT_SKIP_PATHS = ['/health', '/metrics/prometheus', '/metrics', '/'];

/**
 * A time in seconds, as Queen reads it (`JWT_CLOCK_SKEW=30` is 30 seconds), or a
 * duration with a unit (`30s`, `1m`, `500ms`). Parsed to MILLISECONDS. Our generic `duration`
 * reads a bare integer as milliseconds; here that would turn the documented `30` into 30 ms, so
 * a bare integer means seconds for these settings.
 */
function secondsOrDuration(defaultSeconds: number): Setting<number> {
  const base = duration({ default: defaultSeconds * 1000 });
  return {
    form: 'seconds (a bare integer) or a duration with a unit (ms, s, m, h)',
    defaultText: `${defaultSeconds}s`,
    required: false,
    read(text) {
      if (text !== undefined && /^\s*\d+\s*$/.test(text)) return Number(text.trim()) * 1000;
      try {
        return base.read(text);
      } catch (error) {
        // Keep the config package's error class (parseEnv collects only its own), but say what
        // this setting accepts: the generic text would claim a bare integer is milliseconds.
        if (error instanceof Error) error.message = `expected ${this.form}, got ${JSON.stringify(text)}`;
        throw error;
      }
    },
  };
}

/**
 * The broker's auth settings, with Queen's names and defaults (docs/auth.md, "Broker profile"), as a spec fragment the broker
 * spreads into its config spec. `JWT_ALGORITHM` is read as text and checked by
 * `validateBrokerAuthConfig` only when `JWT_ENABLED=true`, as docs/auth.md specifies (a disabled
 * validator ignores it, like Queen).
 *
 * Two settings beyond that list, with Queen's names and defaults: `JWT_JWKS_REFRESH_INTERVAL`
 * (re-read the key set at least this often, so a removed key stops verifying; 3600 s) and
 * `JWT_JWKS_TIMEOUT_MS` (5000).
 */
export const brokerAuthSettings = {
  JWT_ENABLED: boolean({ default: false }),
  JWT_ALGORITHM: string({ default: 'HS256' }),
  JWT_SECRET: string(),
  JWT_PUBLIC_KEY: string(),
  JWT_JWKS_URL: url({ protocols: ['https:', 'http:'] }),
  JWT_JWKS_REFRESH_INTERVAL: secondsOrDuration(3600),
  JWT_JWKS_TIMEOUT_MS: integer({ default: 5000, min: 1 }),
  JWT_CLOCK_SKEW: secondsOrDuration(30),
  JWT_ISSUER: string(),
  JWT_AUDIENCE: string(),
  JWT_ROLES_CLAIM: string({ default: 'role' }),
  JWT_ROLES_ARRAY_CLAIM: string({ default: 'roles' }),
  JWT_ROLE_ADMIN: string({ default: 'admin' }),
  JWT_ROLE_READ_WRITE: string({ default: 'read-write' }),
  JWT_ROLE_READ_ONLY: string({ default: 'read-only' }),
  JWT_ROLE_WRITE_ONLY: string({ default: 'write-only' }),
  JWT_SKIP_PATHS: list({ default: DEFAULT_SKIP_PATHS }),
};

export type BrokerAuthConfig = ConfigOf<typeof brokerAuthSettings>;

export function isBrokerJwtAlgorithm(value: string): value is BrokerJwtAlgorithm {
  return (BROKER_JWT_ALGORITHMS as readonly string[]).includes(value);
}

const SUPPORTED_LIST = 'HS256, HS384, HS512, RS256, RS384, RS512, EdDSA, or auto';

/**
 * Boot-time validation (seed, "Boot-time validation is fatal"): with `JWT_ENABLED=true`,
 * throws a ConfigError naming what is missing when
 *  - `JWT_ALGORITHM` is outside the supported list;
 *  - HS256/HS384/HS512 or auto has none of `JWT_SECRET`, `JWT_PUBLIC_KEY`, `JWT_JWKS_URL`;
 *  - RS256/RS384/RS512 or EdDSA has neither `JWT_PUBLIC_KEY` nor `JWT_JWKS_URL`.
 * Everything else (a wrong secret, an unreachable JWKS, a bad PEM) starts and fails per
 * request (docs/auth.md, "Broker profile"). The caller exits before binding.
 */
export function validateBrokerAuthConfig(config: BrokerAuthConfig): void {
  if (!config.JWT_ENABLED) return;
  const algorithm = config.JWT_ALGORITHM;
  if (!isBrokerJwtAlgorithm(algorithm)) {
    throw new ConfigError('JWT_ALGORITHM', `${algorithm} is not supported (use ${SUPPORTED_LIST})`);
  }
  const hasSecret = Boolean(config.JWT_SECRET);
  const hasPublicKey = Boolean(config.JWT_PUBLIC_KEY);
  const hasJwks = Boolean(config.JWT_JWKS_URL);
  if (algorithm.startsWith('HS') || algorithm === 'auto') {
    if (!hasSecret && !hasPublicKey && !hasJwks) {
      throw new ConfigError(
        'JWT_SECRET',
        `JWT_ENABLED=true with JWT_ALGORITHM=${algorithm} but no key material: set JWT_SECRET (HS*), or JWT_PUBLIC_KEY / JWT_JWKS_URL (RS*/EdDSA)`,
      );
    }
    return;
  }
  if (!hasPublicKey && !hasJwks) {
    throw new ConfigError(
      'JWT_PUBLIC_KEY',
      `JWT_ENABLED=true with JWT_ALGORITHM=${algorithm} but neither JWT_PUBLIC_KEY nor JWT_JWKS_URL is set`,
    );
  }
}

import { duration, enumOf, list, port, string } from '@herald/config';

const LOG_LEVELS = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'] as const;

/** The environment settings every service shares (docs/contracts.md), spread into its spec. */
export function httpSettings(defaultPort: number) {
  return {
    PORT: port({ default: defaultPort }),
    HOST: string({ default: '0.0.0.0' }),
    TLS_CERT_FILE: string(),
    TLS_KEY_FILE: string(),
    /** IPs/CIDRs whose X-Forwarded-* headers are believed; `true` trusts every hop. */
    TRUSTED_PROXIES: list({ default: [] }),
    LOG_LEVEL: enumOf(LOG_LEVELS, { default: 'info', caseInsensitive: true }),
    /** Bound on in-flight work after SIGTERM before connections are cut. */
    SHUTDOWN_TIMEOUT: duration({ default: 30_000 }),
  };
}

export interface HttpConfig {
  readonly PORT: number;
  readonly HOST: string;
  readonly TLS_CERT_FILE: string | undefined;
  readonly TLS_KEY_FILE: string | undefined;
  readonly TRUSTED_PROXIES: readonly string[];
  readonly LOG_LEVEL: (typeof LOG_LEVELS)[number];
  readonly SHUTDOWN_TIMEOUT: number;
}

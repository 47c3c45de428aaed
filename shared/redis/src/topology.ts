import {
  boolean,
  ConfigError,
  type ConfigOf,
  duration,
  type Environment,
  parseEnv,
  string,
} from '@herald/config';

/** One Redis endpoint. */
export interface RedisAddress {
  readonly host: string;
  readonly port: number;
}

/** Credentials of an ACL user (`username` unset: the `default` user) or of `requirepass`. */
export interface RedisCredentials {
  readonly username?: string;
  readonly password?: string;
}

/**
 * Where Redis lives (issue #12):
 * - `standalone`: one server by URL (`redis://`/`rediss://`, credentials, database and TLS in it);
 * - `sentinel`: a primary found through Sentinel by its master name, replaced on failover;
 * - `cluster`: Redis Cluster, found from seed nodes; keys spread over shards by hash slot.
 * `tls` covers every connection of the topology (sentinels and data nodes alike).
 */
export type RedisTopology = StandaloneTopology | SentinelTopology | ClusterTopology;

export interface StandaloneTopology {
  readonly kind: 'standalone';
  readonly url: string;
}

export interface SentinelTopology extends RedisCredentials {
  readonly kind: 'sentinel';
  readonly sentinels: readonly RedisAddress[];
  readonly masterName: string;
  /** ACL user and password of the sentinels themselves (`requirepass` in sentinel.conf). */
  readonly sentinelUsername?: string;
  readonly sentinelPassword?: string;
  readonly tls: boolean;
}

export interface ClusterTopology extends RedisCredentials {
  readonly kind: 'cluster';
  readonly nodes: readonly RedisAddress[];
  readonly tls: boolean;
}

/**
 * The Redis variables both services read (docs/contracts.md, "Redis topology"). All optional:
 * none set is the in-process backend. They are read as text and checked together by
 * `redisTopologyFrom`, which never puts a password or a URL's credentials in a message.
 * No `REDIS_` prefix is "owned" (an unknown REDIS_ variable is not refused): Kubernetes injects
 * `REDIS_PORT`, `REDIS_SERVICE_HOST`… for a Service named `redis`.
 */
export const redisSettings = {
  /** Standalone: `redis://[user:password@]host:port[/db]`, `rediss://` for TLS. */
  REDIS_URL: string(),
  /** Sentinel: `host:port,host:port,…` (port default 26379), with REDIS_SENTINEL_MASTER. */
  REDIS_SENTINELS: string(),
  REDIS_SENTINEL_MASTER: string(),
  REDIS_SENTINEL_USERNAME: string(),
  REDIS_SENTINEL_PASSWORD: string(),
  /** Cluster: seed nodes `host:port,host:port,…` (port default 6379). */
  REDIS_CLUSTER_NODES: string(),
  /** Data nodes' credentials for Sentinel and Cluster (standalone: in REDIS_URL). */
  REDIS_USERNAME: string(),
  REDIS_PASSWORD: string(),
  /** TLS to every Sentinel and Cluster connection (standalone: `rediss://`). */
  REDIS_TLS: boolean({ default: false }),
  /**
   * How long a request's Redis command may go unanswered before the request is refused (503),
   * 50 ms to 60 s; unset: each service's default (broker 1 s, hub reads 2 s). docs/contracts.md,
   * "Redis command deadline".
   */
  REDIS_COMMAND_TIMEOUT: duration({ min: 50, max: 60_000 }),
} as const;

export type RedisSettings = ConfigOf<typeof redisSettings>;

const TOPOLOGY_VARIABLES = ['REDIS_URL', 'REDIS_SENTINELS', 'REDIS_CLUSTER_NODES'] as const;

/** `host:port` items; `[v6]:port` for IPv6. Items are never echoed: one may hold a pasted URL with a password. */
export function parseAddressList(variable: string, text: string, defaultPort: number): RedisAddress[] {
  const items = text
    .split(',')
    .map((item) => item.trim())
    .filter((item) => item !== '');
  if (items.length === 0) throw new ConfigError(variable, 'expected a comma-separated list of host:port');
  return items.map((item, index) => {
    const match = /^(?:\[(?<v6>[0-9a-fA-F:.]+)\]|(?<host>[A-Za-z0-9._-]+))(?::(?<port>\d{1,5}))?$/.exec(item);
    const host = match?.groups?.v6 ?? match?.groups?.host;
    const port = match?.groups?.port === undefined ? defaultPort : Number(match.groups.port);
    if (!host || port < 1 || port > 65535) {
      throw new ConfigError(
        variable,
        `item ${index + 1} of ${items.length} is not host:port (a host name or IP, a port in 1-65535; credentials go in their own variables)`,
      );
    }
    return { host, port };
  });
}

/** A standalone URL, checked; the message names the scheme at most, never the URL (it may hold a password). */
export function checkRedisUrl(variable: string, text: string): string {
  if (!URL.canParse(text)) throw new ConfigError(variable, unparsableRedisUrl(text));
  const { protocol, hostname } = new URL(text);
  if (protocol !== 'redis:' && protocol !== 'rediss:') {
    throw new ConfigError(variable, `expected redis:// or rediss://, got ${protocol}`);
  }
  if (hostname === '') throw new ConfigError(variable, 'expected a redis:// or rediss:// URL with a host');
  return text;
}

/**
 * Why a value is not a URL, in words an operator can act on, without echoing it: a missing
 * `://`, a port out of range, or else the expected form.
 */
function unparsableRedisUrl(text: string): string {
  const example = 'expected a redis:// or rediss:// URL (redis://[user:password@]host:port[/db])';
  const scheme = /^([A-Za-z][A-Za-z0-9+.-]*):?/.exec(text.trim());
  if (!text.includes('://')) {
    return scheme && /^rediss?$/i.test(scheme[1] as string)
      ? `${example}: "://" is missing after the scheme`
      : `${example}: the value has no scheme://`;
  }
  // The port is what follows the last ':' of the authority (after any credentials' '@').
  const authority = (text.split('://', 2)[1] ?? '').split(/[/?#]/, 1)[0] ?? '';
  const hostPort = authority.slice(authority.lastIndexOf('@') + 1);
  const port = /:(\d+)$/.exec(hostPort)?.[1];
  if (port !== undefined && Number(port) > 65535) {
    return `the port ${port} is out of range (1-65535)`;
  }
  if (/:[^\d\]]+$/.test(hostPort)) return `${example}: the port is not a number`;
  return example;
}

function refuse(settings: RedisSettings, names: readonly (keyof RedisSettings)[], reason: string): void {
  const present = names.find((name) => settings[name] !== undefined);
  if (present) throw new ConfigError(present, reason);
}

/**
 * The one rule that turns the Redis variables into a topology, for both services: exactly one
 * of REDIS_URL, REDIS_SENTINELS, REDIS_CLUSTER_NODES (none: undefined, the in-process backend);
 * a variable that belongs to another topology than the chosen one is refused rather than ignored.
 * Throws a ConfigError naming the variable.
 */
export function redisTopologyFrom(settings: RedisSettings): RedisTopology | undefined {
  const chosen = TOPOLOGY_VARIABLES.filter((name) => settings[name] !== undefined);
  if (chosen.length > 1) {
    throw new ConfigError(
      chosen[1] as string,
      `set together with ${chosen[0]}; set exactly one of ${TOPOLOGY_VARIABLES.join(', ')}`,
    );
  }
  const sentinelOnly = [
    'REDIS_SENTINEL_MASTER',
    'REDIS_SENTINEL_USERNAME',
    'REDIS_SENTINEL_PASSWORD',
  ] as const;
  const credentials = {
    ...(settings.REDIS_USERNAME !== undefined ? { username: settings.REDIS_USERNAME } : {}),
    ...(settings.REDIS_PASSWORD !== undefined ? { password: settings.REDIS_PASSWORD } : {}),
  };
  switch (chosen[0]) {
    case undefined:
      refuse(
        settings,
        [...sentinelOnly, 'REDIS_USERNAME', 'REDIS_PASSWORD'],
        `no Redis is configured; set one of ${TOPOLOGY_VARIABLES.join(', ')}`,
      );
      if (settings.REDIS_TLS) {
        throw new ConfigError(
          'REDIS_TLS',
          `no Redis is configured; set one of ${TOPOLOGY_VARIABLES.join(', ')}`,
        );
      }
      return undefined;
    case 'REDIS_URL':
      refuse(settings, sentinelOnly, 'applies to REDIS_SENTINELS only, not to REDIS_URL');
      refuse(
        settings,
        ['REDIS_USERNAME', 'REDIS_PASSWORD'],
        'with REDIS_URL the credentials go in the URL (redis://user:password@host:port)',
      );
      if (settings.REDIS_TLS)
        throw new ConfigError('REDIS_TLS', 'with REDIS_URL, TLS is chosen by rediss://');
      return { kind: 'standalone', url: checkRedisUrl('REDIS_URL', settings.REDIS_URL as string) };
    case 'REDIS_SENTINELS': {
      const masterName = settings.REDIS_SENTINEL_MASTER?.trim();
      if (!masterName) {
        throw new ConfigError(
          'REDIS_SENTINEL_MASTER',
          'is required with REDIS_SENTINELS (the monitored master name)',
        );
      }
      return {
        kind: 'sentinel',
        sentinels: parseAddressList('REDIS_SENTINELS', settings.REDIS_SENTINELS as string, 26379),
        masterName,
        ...(settings.REDIS_SENTINEL_USERNAME !== undefined
          ? { sentinelUsername: settings.REDIS_SENTINEL_USERNAME }
          : {}),
        ...(settings.REDIS_SENTINEL_PASSWORD !== undefined
          ? { sentinelPassword: settings.REDIS_SENTINEL_PASSWORD }
          : {}),
        ...credentials,
        tls: settings.REDIS_TLS,
      };
    }
    case 'REDIS_CLUSTER_NODES':
      refuse(settings, sentinelOnly, 'applies to REDIS_SENTINELS only, not to REDIS_CLUSTER_NODES');
      return {
        kind: 'cluster',
        nodes: parseAddressList('REDIS_CLUSTER_NODES', settings.REDIS_CLUSTER_NODES as string, 6379),
        ...credentials,
        tls: settings.REDIS_TLS,
      };
  }
}

/** `redisSettings` parsed from an environment and turned into a topology, in one call. */
export function redisTopologyFromEnv(environment: Environment): RedisTopology | undefined {
  return redisTopologyFrom(parseEnv(redisSettings, environment));
}

function formatAddress({ host, port }: RedisAddress): string {
  return host.includes(':') ? `[${host}]:${port}` : `${host}:${port}`;
}

/**
 * What an operator reads in a log line about this Redis, never a credential: `host:port`
 * (standalone), `sentinel master <name> via host:port,…`, `cluster host:port,…`.
 */
export function describeTopology(topology: RedisTopology): string {
  switch (topology.kind) {
    case 'standalone': {
      // A Unix socket (the embedded default's in-process Redis): ioredis takes its path as the URL.
      if (topology.url.startsWith('/')) return `unix socket ${topology.url}`;
      const parsed = new URL(topology.url);
      return `${parsed.hostname}:${parsed.port || '6379'}`;
    }
    case 'sentinel':
      return `sentinel master ${topology.masterName} via ${topology.sentinels.map(formatAddress).join(',')}`;
    case 'cluster':
      return `cluster ${topology.nodes.map(formatAddress).join(',')}`;
  }
}

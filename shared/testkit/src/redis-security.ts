import type { TestCertificates } from './tls.js';

/** An ACL user: a name and its password. */
export interface AclUser {
  readonly username: string;
  readonly password: string;
}

/**
 * How the harness reaches a server of a set or a cluster started with TLS and ACL (issue #12):
 * the CA to verify its TLS port with, and the user to run INFO, CLUSTER and SENTINEL commands
 * as. Empty: plain TCP as `default`, the harness's defaults.
 */
export interface RedisAccess {
  readonly caFile?: string;
  readonly user?: AclUser;
}

/**
 * One configuration directive, name first (`['tls-port', '6380']`): written `--name value…` on a
 * `redis-server` command line or `name value…` in a configuration file (sentinel.conf).
 */
export type Directive = readonly string[];

export function asArguments(directives: readonly Directive[]): string[] {
  return directives.flatMap(([name, ...values]) => [`--${name}`, ...values]);
}

export function asConfigurationLines(directives: readonly Directive[]): string[] {
  return directives.map((directive) => directive.join(' '));
}

/**
 * The listening directives of a server on `port`: plain TCP, or with `certificates` TLS only
 * (`port 0`, `tls-port`), clients verified by nobody (`tls-auth-clients no`: the services
 * present no client certificate) and every link the server opens itself (replication, and the
 * sentinels' links to servers and to each other) on TLS too; `tls-cluster yes` for a Cluster
 * node (its bus and the port it announces).
 */
export function listenDirectives(
  port: number,
  certificates: TestCertificates | undefined,
  { cluster = false } = {},
): Directive[] {
  if (!certificates) return [['port', String(port)]];
  return [
    ['port', '0'],
    ['tls-port', String(port)],
    ['tls-cert-file', certificates.certFile],
    ['tls-key-file', certificates.keyFile],
    ['tls-ca-cert-file', certificates.caFile],
    ['tls-auth-clients', 'no'],
    ['tls-replication', 'yes'],
    ...(cluster ? [['tls-cluster', 'yes']] : []),
  ];
}

/**
 * ACL directives: `user` with every key, channel and command, and `default` allowed PING only
 * (what `RedisProcess` checks a server is up with); none without a user.
 */
export function userDirectives(user: AclUser | undefined): Directive[] {
  if (!user) return [];
  return [
    ['user', 'default', 'on', 'nopass', 'resetchannels', '-@all', '+ping'],
    ['user', user.username, 'on', `>${user.password}`, '~*', '&*', '+@all'],
  ];
}

/** A replica's credentials on its primary (`masteruser`/`masterauth`); none without a user. */
export function replicationDirectives(user: AclUser | undefined): Directive[] {
  if (!user) return [];
  return [
    ['masteruser', user.username],
    ['masterauth', user.password],
  ];
}

/** `redis-cli` arguments and environment for `access` (the password in REDISCLI_AUTH, not argv). */
export function redisCliAccess(access: RedisAccess): {
  readonly args: string[];
  readonly env: Record<string, string>;
} {
  return {
    args: [
      ...(access.caFile ? ['--tls', '--cacert', access.caFile] : []),
      ...(access.user ? ['--user', access.user.username] : []),
    ],
    env: access.user ? { REDISCLI_AUTH: access.user.password } : {},
  };
}

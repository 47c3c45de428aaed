import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { freePort } from './ports.js';
import {
  infoFields,
  RedisProcess,
  redisCliAs,
  redisServerAvailable,
  redisServerMissingMessage,
} from './redis-process.js';
import {
  type AclUser,
  asArguments,
  asConfigurationLines,
  listenDirectives,
  type RedisAccess,
  replicationDirectives,
  userDirectives,
} from './redis-security.js';
import type { TestCertificates } from './tls.js';
import { waitFor } from './wait.js';

export interface RedisSentinelSetOptions {
  readonly replicas?: number;
  readonly sentinels?: number;
  /** `sentinel down-after-milliseconds`: how long the primary may be silent before a failover. */
  readonly downAfterMs?: number;
  /** How long `start` and the waits may take (ms). */
  readonly timeoutMs?: number;
  /**
   * TLS only, servers and sentinels alike: the plain port closed, each on a TLS port with this
   * certificate (`createTestCertificates`), replication and the sentinels' links on TLS.
   */
  readonly tls?: TestCertificates;
  /**
   * An ACL user with every right on the data servers, `default` then allowed PING only: the
   * replicas replicate as it (`masteruser`) and the sentinels monitor as it (`auth-user`).
   */
  readonly user?: AclUser;
  /**
   * An ACL user of the sentinels themselves (REDIS_SENTINEL_USERNAME/_PASSWORD), `default` then
   * allowed PING only on them; the sentinels talk to each other as it (`sentinel-user`).
   */
  readonly sentinelUser?: AclUser;
}

/**
 * A private Sentinel-managed Redis (issue #12): one primary, `replicas` replicas
 * (`--replicaof`), `sentinels` sentinels (`redis-server <conf> --sentinel`) with a quorum of a
 * majority, on free ports, for tests that kill the primary and watch the failover. Sentinels
 * rewrite their configuration file, so each has its own in the set's tmp directory.
 */
export class RedisSentinelSet {
  readonly directory = mkdtempSync(join(tmpdir(), 'herald-redis-sentinel-'));
  readonly masterName = 'herald';
  private readonly servers = new Map<number, RedisProcess>();
  private readonly sentinelProcesses = new Map<number, RedisProcess>();

  private constructor(
    private readonly timeoutMs: number,
    private readonly options: RedisSentinelSetOptions,
  ) {}

  static async start(options: RedisSentinelSetOptions = {}): Promise<RedisSentinelSet> {
    if (!redisServerAvailable()) throw new Error(redisServerMissingMessage);
    const replicas = options.replicas ?? 2;
    const sentinels = options.sentinels ?? 3;
    const downAfterMs = options.downAfterMs ?? 1000;
    const set = new RedisSentinelSet(options.timeoutMs ?? 30_000, options);
    try {
      const primaryPort = await freePort();
      await set.launchServer(primaryPort, []);
      for (let index = 0; index < replicas; index++) {
        await set.launchServer(await freePort(), [['replicaof', '127.0.0.1', String(primaryPort)]]);
      }
      const quorum = Math.floor(sentinels / 2) + 1;
      const { user, sentinelUser } = options;
      for (let index = 0; index < sentinels; index++) {
        const port = await freePort();
        const configFile = join(set.directory, `sentinel-${port}.conf`);
        writeFileSync(
          configFile,
          [
            ...asConfigurationLines([
              ...listenDirectives(port, options.tls),
              ['bind', '127.0.0.1'],
              ['dir', set.directory],
              ['logfile', join(set.directory, `log-sentinel-${port}`)],
              ...userDirectives(sentinelUser),
            ]),
            `sentinel monitor ${set.masterName} 127.0.0.1 ${primaryPort} ${quorum}`,
            `sentinel down-after-milliseconds ${set.masterName} ${downAfterMs}`,
            `sentinel failover-timeout ${set.masterName} ${Math.max(3 * downAfterMs, 3000)}`,
            `sentinel parallel-syncs ${set.masterName} ${replicas}`,
            ...(user
              ? [
                  `sentinel auth-user ${set.masterName} ${user.username}`,
                  `sentinel auth-pass ${set.masterName} ${user.password}`,
                ]
              : []),
            ...(sentinelUser
              ? [
                  `sentinel sentinel-user ${sentinelUser.username}`,
                  `sentinel sentinel-pass ${sentinelUser.password}`,
                ]
              : []),
            '',
          ].join('\n'),
        );
        const sentinel = new RedisProcess(port, [configFile, '--sentinel'], set.sentinelAccess);
        set.sentinelProcesses.set(port, sentinel);
        await sentinel.launch();
      }
      await set.waitHealthy();
      return set;
    } catch (error) {
      await set.stop();
      throw error;
    }
  }

  private async launchServer(port: number, extra: readonly (readonly string[])[]): Promise<void> {
    const { tls, user } = this.options;
    const server = new RedisProcess(
      port,
      asArguments([
        ...listenDirectives(port, tls),
        ['bind', '127.0.0.1'],
        ['save', ''],
        ['appendonly', 'no'],
        ['dir', this.directory],
        ['logfile', join(this.directory, `log-${port}`)],
        ...userDirectives(user),
        // Every server: a replica promoted by a failover and a former primary turned replica
        // alike authenticate to their primary.
        ...replicationDirectives(user),
        ...extra,
      ]),
      this.access,
    );
    this.servers.set(port, server);
    await server.launch();
  }

  /** How the harness reaches the data servers (their CA and user). */
  private get access(): RedisAccess {
    return {
      ...(this.options.tls ? { caFile: this.options.tls.caFile } : {}),
      ...(this.options.user ? { user: this.options.user } : {}),
    };
  }

  /** How the harness reaches the sentinels. */
  private get sentinelAccess(): RedisAccess {
    return {
      ...(this.options.tls ? { caFile: this.options.tls.caFile } : {}),
      ...(this.options.sentinelUser ? { user: this.options.sentinelUser } : {}),
    };
  }

  /** Every sentinel as `127.0.0.1:<port>` (REDIS_SENTINELS). */
  get sentinels(): string[] {
    return [...this.sentinelProcesses.keys()].map((port) => `127.0.0.1:${port}`);
  }

  /** Ports of the data servers (primary and replicas), killed ones included. */
  get serverPorts(): number[] {
    return [...this.servers.keys()];
  }

  private liveSentinelPorts(): number[] {
    return [...this.sentinelProcesses].filter(([, sentinel]) => sentinel.running).map(([port]) => port);
  }

  /** Port of the primary as the sentinel on `sentinelPort` names it. */
  async primaryAccordingTo(sentinelPort: number): Promise<number> {
    const reply = await redisCliAs(
      this.sentinelAccess,
      sentinelPort,
      'sentinel',
      'get-master-addr-by-name',
      this.masterName,
    );
    const port = Number(reply.trim().split('\n')[1]);
    if (!Number.isInteger(port) || port <= 0) throw new Error(`unexpected reply ${JSON.stringify(reply)}`);
    return port;
  }

  /** Port of the primary, as the first live sentinel that answers says. */
  async primary(): Promise<number> {
    let lastError: unknown;
    for (const port of this.liveSentinelPorts()) {
      try {
        return await this.primaryAccordingTo(port);
      } catch (error) {
        lastError = error;
      }
    }
    throw new Error('no sentinel answers', { cause: lastError });
  }

  /** Sends `signal` to a data server (SIGKILL: a crash; SIGSTOP/SIGCONT: a pause). */
  async kill(port: number, signal: NodeJS.Signals = 'SIGKILL'): Promise<void> {
    const server = this.servers.get(port);
    if (!server) throw new Error(`port ${port} is not a server of this set`);
    await server.kill(signal);
  }

  /** Sends `signal` to a sentinel, by its port (SIGSTOP/SIGCONT: a sentinel that stops answering). */
  async signalSentinel(port: number, signal: NodeJS.Signals): Promise<void> {
    const sentinel = this.sentinelProcesses.get(port);
    if (!sentinel) throw new Error(`port ${port} is not a sentinel of this set`);
    await sentinel.kill(signal);
  }

  /** kill -9 of the current primary; returns its port. */
  async killPrimary(): Promise<number> {
    const port = await this.primary();
    await this.kill(port);
    return port;
  }

  /** Starts a killed server again (the sentinels turn a former primary into a replica). */
  async restart(port: number): Promise<void> {
    const server = this.servers.get(port);
    if (!server) throw new Error(`port ${port} is not a server of this set`);
    await server.launch();
  }

  /**
   * After the primary on `oldPort` died: waits until every live sentinel names another server
   * as primary and that server answers as a primary; returns its port.
   */
  async waitForFailover(oldPort: number): Promise<number> {
    return waitFor(
      async () => {
        const named = await Promise.all(
          this.liveSentinelPorts().map((port) => this.primaryAccordingTo(port)),
        );
        const [first] = named;
        if (first === undefined || first === oldPort || named.some((port) => port !== first))
          return undefined;
        const role = infoFields(await redisCliAs(this.access, first, 'info', 'replication')).get('role');
        return role === 'master' ? first : undefined;
      },
      { timeoutMs: this.timeoutMs, intervalMs: 100, what: `a failover away from ${oldPort}` },
    );
  }

  /**
   * Every live sentinel knows the primary, every live replica and every other sentinel; every
   * live replica is in sync.
   */
  async waitHealthy(): Promise<void> {
    await waitFor(
      async () => {
        const sentinels = this.liveSentinelPorts();
        const primary = await this.primary();
        const liveServers = [...this.servers].filter(([, server]) => server.running).map(([port]) => port);
        for (const port of sentinels) {
          const fields = new Map<string, string>();
          const flat = (await redisCliAs(this.sentinelAccess, port, 'sentinel', 'master', this.masterName))
            .trim()
            .split('\n');
          for (let index = 0; index + 1 < flat.length; index += 2) {
            fields.set(flat[index] as string, flat[index + 1] as string);
          }
          if (fields.get('port') !== String(primary) || fields.get('flags') !== 'master') return false;
          if (fields.get('num-slaves') !== String(liveServers.length - 1)) return false;
          if (fields.get('num-other-sentinels') !== String(sentinels.length - 1)) return false;
        }
        for (const port of liveServers) {
          if (port === primary) continue;
          const replication = infoFields(await redisCliAs(this.access, port, 'info', 'replication'));
          if (replication.get('master_port') !== String(primary)) return false;
          if (replication.get('master_link_status') !== 'up') return false;
        }
        return true;
      },
      { timeoutMs: this.timeoutMs, intervalMs: 100, what: 'a healthy Sentinel set' },
    );
  }

  /** Kills every process and removes the directory. */
  async stop(): Promise<void> {
    await Promise.all(
      [...this.servers.values(), ...this.sentinelProcesses.values()].map((process) =>
        process.kill('SIGKILL'),
      ),
    );
    rmSync(this.directory, { recursive: true, force: true });
  }
}

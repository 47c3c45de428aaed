import { execFile } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { keySlot } from './key-slot.js';
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
  listenDirectives,
  type RedisAccess,
  redisCliAccess,
  replicationDirectives,
  userDirectives,
} from './redis-security.js';
import type { TestCertificates } from './tls.js';
import { waitFor } from './wait.js';

export interface RedisClusterOptions {
  readonly primaries?: number;
  readonly replicasPerPrimary?: number;
  /** `cluster-node-timeout` (ms): how long a node may be unreachable before its replica takes over. */
  readonly nodeTimeoutMs?: number;
  /** How long `start` and the waits may take (ms). */
  readonly timeoutMs?: number;
  /**
   * TLS only: the plain port closed, each node on a TLS port with this certificate
   * (`createTestCertificates`), the cluster bus (`tls-cluster yes`) and replication on TLS; the
   * nodes announce their TLS ports.
   */
  readonly tls?: TestCertificates;
  /**
   * An ACL user with every right on every node, `default` then allowed PING only; replicas
   * replicate as it (`masteruser`), `redis-cli --cluster create` runs as it.
   */
  readonly user?: AclUser;
}

/** One line of CLUSTER NODES, as seen by one node. */
export interface ClusterNode {
  readonly id: string;
  readonly port: number;
  readonly role: 'primary' | 'replica';
  /** The primary's id, for a replica. */
  readonly primaryId: string | undefined;
  /** Flagged `fail` (or `fail?`) by the node that answered. */
  readonly failing: boolean;
  /** Slot ranges, inclusive, for a primary. */
  readonly slots: readonly (readonly [number, number])[];
}

const SLOTS = 16384;

/** Parses CLUSTER NODES (the cluster spec's "CLUSTER NODES output format"). */
export function parseClusterNodes(text: string): ClusterNode[] {
  const nodes: ClusterNode[] = [];
  for (const line of text.split('\n')) {
    const fields = line.trim().split(' ');
    if (fields.length < 8) continue;
    const [id, address, flagText, primaryId] = fields as [string, string, string, string];
    const flags = flagText.split(',');
    const port = Number(address.split('@')[0]?.split(':').at(-1));
    const slots: [number, number][] = [];
    for (const range of fields.slice(8)) {
      if (range.startsWith('[')) continue; // a slot being migrated or imported
      const [low, high] = range.split('-').map(Number) as [number, number | undefined];
      slots.push([low, high ?? low]);
    }
    nodes.push({
      id,
      port,
      role: flags.includes('master') ? 'primary' : 'replica',
      primaryId: primaryId === '-' ? undefined : primaryId,
      failing: flags.includes('fail') || flags.includes('fail?'),
      slots,
    });
  }
  return nodes;
}

function owns(node: ClusterNode, slot: number): boolean {
  return node.slots.some(([low, high]) => slot >= low && slot <= high);
}

function slotCount(node: ClusterNode): number {
  return node.slots.reduce((sum, [low, high]) => sum + high - low + 1, 0);
}

/**
 * A private Redis Cluster on free ports (issue #12): `primaries` primaries with
 * `replicasPerPrimary` replicas each, built with `redis-cli --cluster create`, for tests that
 * run Herald on Cluster, kill a primary and watch the failover. Every node writes its files
 * (nodes-<port>.conf, log-<port>) in one tmp directory, removed by `stop`.
 */
export class RedisCluster {
  readonly directory = mkdtempSync(join(tmpdir(), 'herald-redis-cluster-'));
  private readonly processes = new Map<number, RedisProcess>();
  /** Slots a killed primary owned, so `waitForFailover` knows whose promotion to wait for. */
  private readonly slotsOfKilled = new Map<number, number>();

  private constructor(
    private readonly timeoutMs: number,
    /** How the harness reaches the nodes (their CA and user). */
    private readonly access: RedisAccess,
  ) {}

  static async start(options: RedisClusterOptions = {}): Promise<RedisCluster> {
    if (!redisServerAvailable()) throw new Error(redisServerMissingMessage);
    const primaries = options.primaries ?? 3;
    const replicasPerPrimary = options.replicasPerPrimary ?? 1;
    const nodeTimeoutMs = options.nodeTimeoutMs ?? 2000;
    const { tls, user } = options;
    const cluster = new RedisCluster(options.timeoutMs ?? 30_000, {
      ...(tls ? { caFile: tls.caFile } : {}),
      ...(user ? { user } : {}),
    });
    try {
      const total = primaries * (1 + replicasPerPrimary);
      for (let index = 0; index < total; index++) {
        // The bus port is chosen free too (`cluster-port`, Redis 7), not port + 10000, which
        // may be taken or past 65535.
        const port = await freePort();
        const busPort = await freePort();
        const node = new RedisProcess(
          port,
          asArguments([
            ...listenDirectives(port, tls, { cluster: true }),
            ['cluster-port', String(busPort)],
            ['bind', '127.0.0.1'],
            ['cluster-enabled', 'yes'],
            ['cluster-config-file', join(cluster.directory, `nodes-${port}.conf`)],
            ['cluster-node-timeout', String(nodeTimeoutMs)],
            // A replica always may take over, however long it lost its primary: tests kill at will.
            ['cluster-replica-validity-factor', '0'],
            ['save', ''],
            ['appendonly', 'no'],
            ['dir', cluster.directory],
            ['logfile', join(cluster.directory, `log-${port}`)],
            ...userDirectives(user),
            // Every node: any of them may be or become a replica.
            ...replicationDirectives(user),
          ]),
          cluster.access,
        );
        cluster.processes.set(port, node);
      }
      await Promise.all([...cluster.processes.values()].map((node) => node.launch()));
      await cluster.create(replicasPerPrimary);
      await cluster.waitHealthy();
      return cluster;
    } catch (error) {
      await cluster.stop();
      throw error;
    }
  }

  private create(replicasPerPrimary: number): Promise<void> {
    const cli = redisCliAccess(this.access);
    return new Promise((resolve, reject) => {
      execFile(
        'redis-cli',
        [
          ...cli.args,
          '--cluster',
          'create',
          ...this.nodes,
          '--cluster-replicas',
          String(replicasPerPrimary),
          '--cluster-yes',
        ],
        { timeout: this.timeoutMs, encoding: 'utf8', env: { ...process.env, ...cli.env } },
        (error, stdout) =>
          error
            ? reject(new Error(`redis-cli --cluster create failed: ${error.message}\n${stdout}`))
            : resolve(),
      );
    });
  }

  /** Every node as `127.0.0.1:<port>`, killed ones included: the start-up node list (REDIS_CLUSTER_NODES). */
  get nodes(): string[] {
    return [...this.processes.keys()].map((port) => `127.0.0.1:${port}`);
  }

  /** Ports of the nodes that run now. */
  get livePorts(): number[] {
    return [...this.processes].filter(([, node]) => node.running).map(([port]) => port);
  }

  /** CLUSTER NODES as seen by the first live node that answers. */
  async topology(): Promise<ClusterNode[]> {
    let lastError: unknown;
    for (const port of this.livePorts) {
      try {
        return parseClusterNodes(await redisCliAs(this.access, port, 'cluster', 'nodes'));
      } catch (error) {
        lastError = error;
      }
    }
    throw new Error('no cluster node answers CLUSTER NODES', { cause: lastError });
  }

  /** The primaries that own slots, failing ones excluded. */
  async primaries(): Promise<ClusterNode[]> {
    return (await this.topology()).filter(
      (node) => node.role === 'primary' && !node.failing && slotCount(node) > 0,
    );
  }

  /** Port of the primary serving `slot`. */
  async primaryForSlot(slot: number): Promise<number> {
    const owner = (await this.primaries()).find((node) => owns(node, slot));
    if (!owner) throw new Error(`no live primary serves slot ${slot}`);
    return owner.port;
  }

  /** Port of the primary serving `key` (its hash tag's slot). */
  primaryForKey(key: string): Promise<number> {
    return this.primaryForSlot(keySlot(key));
  }

  private process(port: number): RedisProcess {
    const node = this.processes.get(port);
    if (!node) throw new Error(`port ${port} is not a node of this cluster`);
    return node;
  }

  /**
   * Sends `signal` to a node: SIGKILL (default) crashes it, SIGSTOP pauses it (SIGCONT resumes;
   * paused past the node timeout, its replica takes over).
   */
  async kill(port: number, signal: NodeJS.Signals = 'SIGKILL'): Promise<void> {
    const node = this.process(port);
    if (signal !== 'SIGCONT') {
      const owner = (await this.topology()).find((entry) => entry.port === port);
      if (owner && owner.role === 'primary' && slotCount(owner) > 0) {
        this.slotsOfKilled.set(port, owner.slots[0]?.[0] ?? 0);
      }
    }
    await node.kill(signal);
  }

  /** Starts a killed node again; it rejoins from its nodes.conf (as a replica once failed over). */
  async restart(port: number): Promise<void> {
    await this.process(port).launch();
    await this.waitHealthy();
  }

  /**
   * After `kill(port)` of a primary: waits until a replica serves its slots and every live node
   * reports cluster_state:ok; returns the new primary's port.
   */
  async waitForFailover(port: number): Promise<number> {
    const slot = this.slotsOfKilled.get(port);
    if (slot === undefined) throw new Error(`node ${port} was not a primary when it was killed`);
    const promoted = await waitFor(
      async () => {
        const owner = await this.primaryForSlot(slot).catch(() => undefined);
        return owner !== undefined && owner !== port ? owner : undefined;
      },
      { timeoutMs: this.timeoutMs, intervalMs: 100, what: `a replica of ${port} promoted` },
    );
    await waitFor(() => this.allStateOk(), {
      timeoutMs: this.timeoutMs,
      intervalMs: 100,
      what: 'cluster_state:ok',
    });
    return promoted;
  }

  private async allStateOk(): Promise<boolean> {
    const states = await Promise.all(
      this.livePorts.map(async (port) =>
        infoFields(await redisCliAs(this.access, port, 'cluster', 'info')).get('cluster_state'),
      ),
    );
    return states.every((state) => state === 'ok');
  }

  /**
   * Every live node: cluster_state:ok, every slot served, every live node known and connected;
   * every live replica in sync with its primary (so a failover can happen at once).
   */
  async waitHealthy(): Promise<void> {
    const live = this.livePorts;
    await waitFor(
      async () => {
        for (const port of live) {
          const info = infoFields(await redisCliAs(this.access, port, 'cluster', 'info'));
          if (info.get('cluster_state') !== 'ok' || info.get('cluster_slots_ok') !== String(SLOTS))
            return false;
          const view = parseClusterNodes(await redisCliAs(this.access, port, 'cluster', 'nodes'));
          const liveInView = view.filter((node) => live.includes(node.port));
          if (liveInView.length !== live.length || liveInView.some((node) => node.failing)) return false;
          const self = view.find((node) => node.port === port);
          if (self?.role === 'replica') {
            const replication = infoFields(await redisCliAs(this.access, port, 'info', 'replication'));
            if (replication.get('master_link_status') !== 'up') return false;
          }
        }
        return true;
      },
      { timeoutMs: this.timeoutMs, intervalMs: 100, what: 'a healthy Redis Cluster' },
    );
  }

  /** Kills every node and removes the directory. */
  async stop(): Promise<void> {
    await Promise.all([...this.processes.values()].map((node) => node.kill('SIGKILL')));
    rmSync(this.directory, { recursive: true, force: true });
  }
}

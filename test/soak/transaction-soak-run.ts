/*
 * The transaction soak (issue #25's acceptance for transactions across slots; docs/broker-outbox.md,
 * "Transactions across slots"): a 3-primary Redis Cluster with one replica each, two broker nodes
 * without slot grouping, and workers on both nodes that pop one message of a source queue and run
 * a transaction pushing `<id>-a` and `<id>-b` to two other queues and acking the source message,
 * the three queues on three shards. During the run: kill -9 of a broker node (relaunched), kill -9
 * of a Cluster primary (its replica takes over, the killed node rejoins as a replica), kill -9 of
 * the other broker node. Afterwards, once recovery decided every recorded transaction: every
 * transaction answered committed is whole, none answered refused is applied in part, every acked
 * source message has both sink messages exactly once and no other has any, and no room or share
 * is left held. Shared by the script (test/soak/transaction-soak.ts) and the short test.
 */
import { execFile } from 'node:child_process';
import { setTimeout as sleep } from 'node:timers/promises';
import { promisify } from 'node:util';
import { entryFields } from '@herald/broker';
import { type Cluster, type ClusterTopology, createRedis, redisTopologyFromEnv } from '@herald/redis';
import { keySlot, RedisCluster, waitFor } from '@herald/testkit';
import { MAIN } from '../broker/nodes.js';
import { ClusterClient } from './client.js';
import { ServiceNode } from './processes.js';

export const TRANSACTION_FAULTS = ['node-kill', 'primary-kill'] as const;
export type TransactionFault = (typeof TRANSACTION_FAULTS)[number];

/**
 * Which operation a transaction names first; its queue's slot coordinates the transaction
 * (transactions.ts: the slot of the first queue commits, the others are prepared and applied).
 */
export const OPERATION_ORDERS = ['push-first', 'ack-first'] as const;
export type OperationOrder = (typeof OPERATION_ORDERS)[number];

export interface TransactionSoakOptions {
  messages: number;
  /** Partitions of the source queue: a pop leases one partition, so they bound the concurrency. */
  partitions: number;
  /** Workers per broker node. */
  workersPerNode: number;
  /** Lease of the source queue (s): how long a message held by an unanswered transaction waits. */
  leaseTime: number;
  /** Faults in order, spread evenly over the committed transactions. */
  faults: readonly TransactionFault[];
  /** Source message i is handled with `orders[i % orders.length]`. */
  orders: readonly OperationOrder[];
  /**
   * BROKER_MIN_REPLICAS_ACK of the broker nodes. 1 by default: without it an answer may be lost in
   * a failover (docs/broker-topologies.md, "Replica acknowledgement"), which is not what this
   * run looks for.
   */
  minReplicasAck: number;
  /**
   * BROKER_MIN_REPLICAS_ACK_TIMEOUT (ms; the broker's default 1000). Below REDIS_COMMAND_TIMEOUT
   * (1 s) a write whose replicas do not confirm answers the replication-timeout 503 rather than
   * running into the command deadline.
   */
  replicaAckTimeoutMs: number;
  /**
   * How long a killed primary stays down after its replica took over (ms): the new primary has no
   * replica meanwhile, so with BROKER_MIN_REPLICAS_ACK its writes are answered 503 after they ran.
   */
  rejoinAfterMs: number;
  /** LOG_LEVEL of the broker nodes; their log tails are returned on a failure or when not `warn`. */
  logLevel: string;
  /** The run gives up when no transaction was answered committed for this long. */
  stallMs: number;
  /** How long the end waits for recovery and the relays to finish the recorded transactions. */
  settleMs: number;
  log: (line: string) => void;
}

export const TRANSACTION_SOAK_DEFAULTS: TransactionSoakOptions = {
  messages: 10_000,
  partitions: 16,
  workersPerNode: 4,
  leaseTime: 5,
  faults: ['node-kill', 'primary-kill', 'node-kill'],
  orders: OPERATION_ORDERS,
  minReplicasAck: 1,
  replicaAckTimeoutMs: 1000,
  rejoinAfterMs: 5000,
  logLevel: 'warn',
  stallMs: 90_000,
  settleMs: 90_000,
  log: () => undefined,
};

/** GET /status/queues/:queue/messages reads at most 1,000 from offset ≤ 10,000 (validation.ts). */
const STATUS_PAGE = 1000;
const MAX_CHECKED_MESSAGES = 11_000;
const KEY_PREFIX = 'txsoak:';

/** One answer (or none) to one transaction a worker sent. */
type Outcome = 'committed' | 'refused' | 'unanswered';

interface SourceMessage {
  readonly transactionId: string;
  readonly partitionId: string;
  readonly leaseId: string;
}

export interface SourceVerdict {
  /** The source message's transactionId. */
  readonly id: string;
  readonly status: string;
  readonly sinkA: number;
  readonly sinkB: number;
  readonly attempts: readonly string[];
}

export interface TransactionSoakResult {
  options: Omit<TransactionSoakOptions, 'log'>;
  durationMs: number;
  queues: { source: string; sinkA: string; sinkB: string; slots: number[]; primaries: number[] };
  /** Faults applied, each with how long it took. */
  faults: string[];
  gaveUp: string | undefined;
  pops: number;
  transactions: { committed: number; refused: number; unanswered: number };
  refusals: Record<string, number>;
  unansweredReasons: Record<string, number>;
  /** Source messages by status at the end (`completed`, `pending`, `processing`, …). */
  sourceStatus: Record<string, number>;
  sourceListed: number;
  sinkEntries: { a: number; b: number };
  /** Acked source messages without both sink messages exactly once. */
  ackedNotWhole: number;
  /** Sink messages stored more than once (by transactionId). */
  duplicated: number;
  /** Source messages not acked that have a sink message. */
  sinkWithoutAck: number;
  /** Sink messages no source message explains. */
  foreignSinkMessages: number;
  /** Transactions answered committed whose source is not acked with both sink messages once. */
  committedNotWhole: number;
  /**
   * Transactions answered refused that left something: their source half applied, or acked
   * though no other attempt for it could have committed (every other one refused too).
   */
  refusedApplied: number;
  /** Source messages left unacked at the end. */
  notAcked: number;
  txpushHeld: Record<string, number>;
  preparedShares: number;
  /** Up to 10 shares left prepared: key, time to live, fields. */
  preparedShareDetails: string[];
  pendingLeft: number;
  recordsLeft: number;
  outboxLeft: Record<string, number>;
  /** Up to 10 source messages that broke a rule, with their attempts: the reproduction. */
  examples: SourceVerdict[];
  connectionErrors: number;
  unavailable: number;
  serverErrors: number;
  /** Node log tails, kept when something failed (or with a logLevel other than `warn`). */
  logs: string;
}

const execFileAsync = promisify(execFile);

/** `appendonly yes` + `appendfsync always` on one node (RedisCluster starts them with AOF off). */
async function appendOnlyAlways(port: number): Promise<void> {
  const { stdout } = await execFileAsync('redis-cli', [
    '-p',
    String(port),
    'config',
    'set',
    'appendonly',
    'yes',
    'appendfsync',
    'always',
  ]);
  if (stdout.trim() !== 'OK') throw new Error(`CONFIG SET appendonly on ${port}: ${stdout.trim()}`);
}

/** A queue's key base (docs/broker-storage.md, "Storage"): every key of it shares this hash tag. */
function base(queue: string): string {
  return `${KEY_PREFIX}{${encodeURIComponent(queue)}}:`;
}

/** A source and two sink names whose hash tags fall on three different primaries. */
async function threeShards(
  cluster: RedisCluster,
): Promise<{ names: string[]; slots: number[]; primaries: number[] }> {
  const names: string[] = [];
  const slots: number[] = [];
  const primaries: number[] = [];
  for (let index = 0; names.length < 3; index++) {
    const name = `txsoak.${['source', 'sink-a', 'sink-b'][names.length]}.${index}`;
    const slot = keySlot(`{${encodeURIComponent(name)}}`);
    const primary = await cluster.primaryForSlot(slot);
    if (primaries.includes(primary)) continue;
    names.push(name);
    slots.push(slot);
    primaries.push(primary);
  }
  return { names, slots, primaries };
}

function tally(counts: Record<string, number>, key: string): void {
  counts[key] = (counts[key] ?? 0) + 1;
}

export async function runTransactionSoak(
  overrides: Partial<TransactionSoakOptions> = {},
): Promise<TransactionSoakResult> {
  const options = { ...TRANSACTION_SOAK_DEFAULTS, ...overrides };
  const { log, ...settings } = options;
  if (options.messages > MAX_CHECKED_MESSAGES)
    throw new Error(`--messages: at most ${MAX_CHECKED_MESSAGES} (the status listing's reach)`);
  if (options.orders.length === 0) throw new Error('--orders: at least one');
  const started = performance.now();
  const cluster = await RedisCluster.start({ primaries: 3, replicasPerPrimary: 1 });
  const nodes: ServiceNode[] = [];
  const clients: ClusterClient[] = [];
  const redis = createRedis({
    topology: redisTopologyFromEnv({ REDIS_CLUSTER_NODES: cluster.nodes.join(',') }) as ClusterTopology,
    connectionName: 'transaction-soak',
  }) as Cluster;
  try {
    await Promise.all(cluster.livePorts.map(appendOnlyAlways));
    const shards = await threeShards(cluster);
    const [source, sinkA, sinkB] = shards.names as [string, string, string];
    log(`queues ${source}, ${sinkA}, ${sinkB} in slots ${shards.slots.join(', ')}`);
    const environment = {
      REDIS_CLUSTER_NODES: cluster.nodes.join(','),
      BROKER_KEY_PREFIX: KEY_PREFIX,
      BROKER_TRANSACTION_RECOVERY_AFTER: '1000',
      BROKER_MIN_REPLICAS_ACK: String(options.minReplicasAck),
      BROKER_MIN_REPLICAS_ACK_TIMEOUT: String(options.replicaAckTimeoutMs),
      LOG_LEVEL: options.logLevel,
      SHUTDOWN_TIMEOUT: '5000',
    };
    nodes.push(await ServiceNode.start('broker-a', MAIN, environment));
    nodes.push(await ServiceNode.start('broker-b', MAIN, environment));
    for (const node of nodes) clients.push(new ClusterClient([node.origin]));
    const [first] = clients as [ClusterClient];

    const configured = await first.retrying('POST', '/api/v1/configure', {
      queue: source,
      // retryLimit high: a lease that lapses under a crashed transaction must redeliver, never
      // dead-letter.
      options: { leaseTime: options.leaseTime, retryLimit: 1000 },
    });
    if (configured?.status !== 200)
      throw new Error(`configure answered ${configured?.status} ${configured?.text}`);
    for (let from = 0; from < options.messages; from += 500) {
      const items = [];
      for (let index = from; index < Math.min(from + 500, options.messages); index++) {
        items.push({
          queue: source,
          partition: `p${index % options.partitions}`,
          transactionId: `m${index}`,
          payload: index,
        });
      }
      // The same items again until every one is stored: a resent push dedups.
      for (;;) {
        const reply = await first.retrying('POST', '/api/v1/push', { items });
        if (reply?.status !== 201) throw new Error(`push answered ${reply?.status} ${reply?.text}`);
        const results = JSON.parse(reply.text) as { status: string }[];
        if (results.every((result) => result.status === 'queued' || result.status === 'duplicate')) break;
      }
    }
    log(`${options.messages} source messages pushed`);

    const attempts = new Map<string, Outcome[]>();
    const committedSources = new Set<string>();
    const refusals: Record<string, number> = {};
    const unansweredReasons: Record<string, number> = {};
    const transactions = { committed: 0, refused: 0, unanswered: 0 };
    let pops = 0;
    let aborted = false;
    let drained = false;
    let gaveUp: string | undefined;
    const finished = () => aborted || drained;
    const record = (id: string, outcome: Outcome) => {
      const list = attempts.get(id) ?? [];
      list.push(outcome);
      attempts.set(id, list);
      transactions[outcome] += 1;
      if (outcome === 'committed') committedSources.add(id);
    };

    const transactionOf = (message: SourceMessage) => {
      const index = Number(message.transactionId.slice(1));
      const order = options.orders[index % options.orders.length] as OperationOrder;
      const push = {
        type: 'push',
        items: [
          // Derived from the source message: a transaction retried after an unanswered one dedups.
          { queue: sinkA, transactionId: `${message.transactionId}-a`, payload: index },
          { queue: sinkB, transactionId: `${message.transactionId}-b`, payload: index },
        ],
      };
      const ack = {
        type: 'ack',
        transactionId: message.transactionId,
        partitionId: message.partitionId,
        leaseId: message.leaseId,
        status: 'completed',
      };
      return { operations: order === 'push-first' ? [push, ack] : [ack, push] };
    };

    const worker = async (client: ClusterClient, node: string) => {
      const path = `/api/v1/pop/queue/${encodeURIComponent(source)}?batch=1&wait=true&timeout=1000`;
      while (!finished()) {
        const popped = await client.retrying('GET', path, undefined, finished);
        if (!popped || popped.status === 204) continue;
        if (popped.status !== 200) throw new Error(`pop answered ${popped.status} ${popped.text}`);
        const [message] = (JSON.parse(popped.text) as { messages: SourceMessage[] }).messages;
        if (!message) continue;
        pops += 1;
        // Sent once: an error or a 503 leaves the outcome unknown, and the worker pops again (the
        // message returns when its lease lapses, unless the transaction committed after all).
        let reply: Awaited<ReturnType<ClusterClient['once']>>;
        try {
          reply = await client.once(0, 'POST', '/api/v1/transaction', transactionOf(message));
        } catch (error) {
          client.connectionErrors += 1;
          record(message.transactionId, 'unanswered');
          tally(unansweredReasons, `${node}: connection: ${(error as Error).message}`.slice(0, 100));
          continue;
        }
        if (reply.status >= 500) {
          if (reply.status === 503) client.unavailable += 1;
          else client.serverErrors += 1;
          record(message.transactionId, 'unanswered');
          tally(unansweredReasons, `${node}: ${reply.status} ${reply.text}`.slice(0, 180));
          continue;
        }
        if (reply.status !== 200) throw new Error(`transaction answered ${reply.status} ${reply.text}`);
        const body = JSON.parse(reply.text) as { success: boolean; error?: string | null };
        if (body.success) record(message.transactionId, 'committed');
        else {
          record(message.transactionId, 'refused');
          tally(refusals, body.error ?? 'unknown');
        }
      }
    };

    /** Every source message's queue-mode status, through a broker node. */
    const sourceStates = async () => {
      const states: { transactionId: string; status: string }[] = [];
      for (let offset = 0; offset < options.messages; offset += STATUS_PAGE) {
        const reply = await first.retrying(
          'GET',
          `/api/v1/status/queues/${encodeURIComponent(source)}/messages?limit=${STATUS_PAGE}&offset=${offset}`,
        );
        if (reply?.status !== 200) throw new Error(`status answered ${reply?.status} ${reply?.text}`);
        const page = JSON.parse(reply.text) as { transactionId: string; status: string }[];
        states.push(...page);
        if (page.length < STATUS_PAGE) break;
      }
      return states;
    };

    let lastCommitted = 0;
    let lastProgress = performance.now();
    let faultRunning = false;
    const monitor = async () => {
      while (!finished()) {
        await sleep(1000);
        if (transactions.committed !== lastCommitted || faultRunning) {
          lastCommitted = transactions.committed;
          lastProgress = performance.now();
        }
        const unknown = [...attempts.keys()].filter((id) => !committedSources.has(id)).length;
        // Every message answered, or answered so far plus those whose answer was lost: look.
        if (committedSources.size + unknown >= options.messages) {
          const states = await sourceStates();
          const completed = states.filter((state) => state.status === 'completed').length;
          if (completed === options.messages) drained = true;
        }
        if (!drained && performance.now() - lastProgress > options.stallMs) {
          gaveUp = `no transaction committed for ${options.stallMs / 1000} s`;
          log(gaveUp);
          aborted = true;
        }
        log(
          `${pops} pops, ${transactions.committed} committed, ${transactions.refused} refused, ${transactions.unanswered} unanswered`,
        );
      }
    };

    const faultsApplied: string[] = [];
    const faultTurns = new Map<TransactionFault, number>();
    const applyFault = async (fault: TransactionFault) => {
      const turn = faultTurns.get(fault) ?? 0;
      faultTurns.set(fault, turn + 1);
      const begun = performance.now();
      let label: string;
      if (fault === 'node-kill') {
        // The nodes in turn, so each one is killed.
        const node = nodes[turn % nodes.length] as ServiceNode;
        await node.kill9();
        await sleep(500);
        await node.launch();
        label = `kill -9 ${node.name}`;
      } else {
        // The primaries of the three queues in turn, the source's first: it coordinates the
        // ack-first transactions and holds every push-first one's ack share.
        const queue = [source, sinkA, sinkB][turn % 3] as string;
        const port = await cluster.primaryForKey(`{${encodeURIComponent(queue)}}`);
        await cluster.kill(port);
        const promoted = await cluster.waitForFailover(port);
        log(`replica ${promoted} took over from ${port}`);
        await sleep(options.rejoinAfterMs);
        // The killed node rejoins as the new primary's replica, so writes can be confirmed by a
        // replica again (BROKER_MIN_REPLICAS_ACK).
        await cluster.restart(port);
        await appendOnlyAlways(port);
        label = `kill -9 primary ${port} of ${queue} (replica ${promoted} took over, ${port} rejoined after ${options.rejoinAfterMs} ms)`;
      }
      faultsApplied.push(`${label} (${((performance.now() - begun) / 1000).toFixed(1)} s)`);
      log(`fault ${label} done at ${transactions.committed} committed`);
    };
    const faultRunner = async () => {
      for (const [round, fault] of options.faults.entries()) {
        const threshold = Math.floor(((round + 1) * options.messages) / (options.faults.length + 1));
        while (!finished() && committedSources.size < threshold) await sleep(20);
        if (finished()) return;
        faultRunning = true;
        await applyFault(fault);
        faultRunning = false;
        lastProgress = performance.now();
      }
    };

    const work = Promise.all([
      ...clients.flatMap((client, index) =>
        Array.from({ length: options.workersPerNode }, () =>
          worker(client, (nodes[index] as ServiceNode).name),
        ),
      ),
      faultRunner(),
      monitor(),
    ]);
    await work.catch((error: unknown) => {
      aborted = true;
      throw error;
    });

    // Recovery decides what a killed node left recorded; the relays apply the committed ones'
    // shares and empty the outboxes. Waited for, then read whatever state it reached.
    const queues = [source, sinkA, sinkB];
    const pendingKey = `${KEY_PREFIX}{txn}:pending`;
    const recordsKey = `${KEY_PREFIX}{txn}:records`;
    await waitFor(
      async () => {
        const lengths = await Promise.all(queues.map((queue) => redis.xlen(`${base(queue)}ob`)));
        return (await redis.zcard(pendingKey)) === 0 && lengths.every((length) => length === 0);
      },
      {
        what: 'every recorded transaction decided and every apply intent relayed',
        timeoutMs: options.settleMs,
        intervalMs: 200,
      },
    ).catch((error: Error) => log(error.message));

    const states = await sourceStates();
    const stored = async (queue: string) => {
      const counts = new Map<string, number>();
      const partitions = await redis.hkeys(`${base(queue)}parts`);
      for (const partition of partitions) {
        let start = '-';
        for (;;) {
          const entries = await redis.xrange(`${base(queue)}s:${partition}`, start, '+', 'COUNT', 1000);
          for (const [, fields] of entries) {
            const { transactionId } = entryFields(fields);
            counts.set(transactionId, (counts.get(transactionId) ?? 0) + 1);
          }
          if (entries.length < 1000) break;
          start = `(${(entries.at(-1) as [string, string[]])[0]}`;
        }
      }
      return counts;
    };
    const inA = await stored(sinkA);
    const inB = await stored(sinkB);

    const sourceStatus: Record<string, number> = {};
    const examples: SourceVerdict[] = [];
    let ackedNotWhole = 0;
    let sinkWithoutAck = 0;
    let committedNotWhole = 0;
    let refusedApplied = 0;
    const explained = new Set<string>();
    for (const { transactionId: id, status } of states) {
      tally(sourceStatus, status);
      const a = inA.get(`${id}-a`) ?? 0;
      const b = inB.get(`${id}-b`) ?? 0;
      explained.add(`${id}-a`);
      explained.add(`${id}-b`);
      const acked = status === 'completed';
      const tried = attempts.get(id) ?? [];
      const whole = acked && a === 1 && b === 1;
      let broken = false;
      if (acked && !whole) {
        ackedNotWhole += 1;
        broken = true;
      }
      if (!acked && a + b > 0) {
        sinkWithoutAck += 1;
        broken = true;
      }
      if (tried.includes('committed') && !whole) {
        committedNotWhole += tried.filter((outcome) => outcome === 'committed').length;
        broken = true;
      }
      // A refused transaction left a part, or the whole though no other attempt could have
      // committed it.
      const refused = tried.filter((outcome) => outcome === 'refused').length;
      const halfApplied = !(a === 0 && b === 0 && !acked) && !whole;
      const onlyRefusals = refused > 0 && tried.every((outcome) => outcome === 'refused');
      if (refused > 0 && (halfApplied || (acked && onlyRefusals))) {
        refusedApplied += refused;
        broken = true;
      }
      if (broken && examples.length < 10) examples.push({ id, status, sinkA: a, sinkB: b, attempts: tried });
    }
    const duplicated = [...inA.values(), ...inB.values()].filter((count) => count > 1).length;
    const foreignSinkMessages = [...inA.keys(), ...inB.keys()].filter((id) => !explained.has(id)).length;

    const txpushHeld: Record<string, number> = {};
    const outboxLeft: Record<string, number> = {};
    for (const queue of queues) {
      txpushHeld[queue] = Number((await redis.hget(`${base(queue)}stats`, 'txpush')) ?? 0);
      outboxLeft[queue] = await redis.xlen(`${base(queue)}ob`);
    }
    let preparedShares = 0;
    const preparedShareDetails: string[] = [];
    for (const primary of redis.nodes('master')) {
      let cursor = '0';
      do {
        const [next, keys] = await primary.scan(cursor, 'MATCH', `${KEY_PREFIX}*txp:*`, 'COUNT', 1000);
        cursor = next;
        for (const key of keys) {
          if ((await primary.hget(key, 'state')) !== 'prepared') continue;
          preparedShares += 1;
          const fields = JSON.stringify(await primary.hgetall(key));
          if (preparedShareDetails.length < 10)
            preparedShareDetails.push(`${key} (ttl ${await primary.pttl(key)} ms): ${fields.slice(0, 400)}`);
        }
      } while (cursor !== '0');
    }

    const completed = sourceStatus.completed ?? 0;
    const result: TransactionSoakResult = {
      options: settings,
      durationMs: performance.now() - started,
      queues: { source, sinkA, sinkB, slots: shards.slots, primaries: shards.primaries },
      faults: faultsApplied,
      gaveUp,
      pops,
      transactions,
      refusals,
      unansweredReasons,
      sourceStatus,
      sourceListed: states.length,
      sinkEntries: {
        a: [...inA.values()].reduce((sum, count) => sum + count, 0),
        b: [...inB.values()].reduce((sum, count) => sum + count, 0),
      },
      ackedNotWhole,
      duplicated,
      sinkWithoutAck,
      foreignSinkMessages,
      committedNotWhole,
      refusedApplied,
      notAcked: options.messages - completed,
      txpushHeld,
      preparedShares,
      preparedShareDetails,
      pendingLeft: await redis.zcard(pendingKey),
      recordsLeft: await redis.hlen(recordsKey),
      outboxLeft,
      examples,
      connectionErrors: clients.reduce((sum, client) => sum + client.connectionErrors, 0),
      unavailable: clients.reduce((sum, client) => sum + client.unavailable, 0),
      serverErrors: clients.reduce((sum, client) => sum + client.serverErrors, 0),
      logs: '',
    };
    if (transactionSoakFailures(result).length > 0 || options.logLevel !== 'warn') {
      result.logs = nodes.map((node) => `--- ${node.name} log tail ---\n${node.logTail()}`).join('\n');
    }
    return result;
  } catch (error) {
    const logs = nodes.map((node) => `--- ${node.name} log tail ---\n${node.logTail()}`).join('\n');
    throw new Error(`${error instanceof Error ? error.message : String(error)}\n${logs}`);
  } finally {
    await Promise.all(clients.map((client) => client.close()));
    await Promise.all(nodes.map((node) => node.stop()));
    redis.disconnect();
    await cluster.stop();
  }
}

/** Why the run failed: every count here must be zero. */
export function transactionSoakFailures(result: TransactionSoakResult): string[] {
  const failures: string[] = [];
  const zero = (value: number, what: string) => {
    if (value !== 0) failures.push(`${what}: ${value}`);
  };
  if (result.gaveUp) failures.push(`run gave up: ${result.gaveUp}`);
  zero(result.options.messages - result.sourceListed, 'source messages not listed');
  zero(result.notAcked, 'source messages not acked at the end');
  zero(result.committedNotWhole, 'transactions answered committed but not whole');
  zero(result.refusedApplied, 'transactions answered refused but (partly) applied');
  zero(result.ackedNotWhole, 'acked source messages without both sink messages exactly once');
  zero(result.sinkWithoutAck, 'source messages not acked with a sink message');
  zero(result.duplicated, 'sink messages stored more than once');
  zero(result.foreignSinkMessages, 'sink messages of no source message');
  for (const [queue, held] of Object.entries(result.txpushHeld)) zero(held, `room held (txpush) in ${queue}`);
  zero(result.preparedShares, 'shares left prepared');
  zero(result.pendingLeft, 'transactions left recorded ({txn}:pending)');
  zero(result.recordsLeft, 'transaction records left ({txn}:records)');
  for (const [queue, left] of Object.entries(result.outboxLeft))
    zero(left, `apply intents left in ${queue}'s outbox`);
  return failures;
}

function entries(counts: Record<string, number>): string {
  return (
    Object.entries(counts)
      .map(([key, count]) => `${count}× ${key}`)
      .join('; ') || 'none'
  );
}

function perQueue(values: Record<string, number>): string {
  return Object.entries(values)
    .map(([queue, value]) => `${queue} ${value}`)
    .join(', ');
}

/** The printed table. */
export function formatTransactionTable(result: TransactionSoakResult): string {
  const { transactions, queues } = result;
  const rows: [string, string | number][] = [
    ['messages / source partitions', `${result.options.messages} / ${result.options.partitions}`],
    ['workers (per node × 2 nodes)', `${result.options.workersPerNode} × 2`],
    ['operation orders', result.options.orders.join(', ')],
    [
      'BROKER_MIN_REPLICAS_ACK / its timeout',
      `${result.options.minReplicasAck} / ${result.options.replicaAckTimeoutMs} ms`,
    ],
    [
      'queues (slot → primary port)',
      [queues.source, queues.sinkA, queues.sinkB]
        .map((queue, index) => `${queue} (${queues.slots[index]} → ${queues.primaries[index]})`)
        .join(', '),
    ],
    ['duration', `${(result.durationMs / 1000).toFixed(0)} s`],
    ['faults', result.faults.join(', ') || 'none'],
    ['gave up', result.gaveUp ?? 'no'],
    ['pops', result.pops],
    [
      'transactions committed / refused / unanswered',
      `${transactions.committed} / ${transactions.refused} / ${transactions.unanswered}`,
    ],
    ['refusals', entries(result.refusals)],
    ['unanswered (why)', entries(result.unansweredReasons)],
    ['source messages by status', `${entries(result.sourceStatus)} (${result.sourceListed} listed)`],
    ['sink messages stored (a / b)', `${result.sinkEntries.a} / ${result.sinkEntries.b}`],
    ['committed but not whole', result.committedNotWhole],
    ['refused but (partly) applied', result.refusedApplied],
    ['acked without both sink messages once', result.ackedNotWhole],
    ['not acked with a sink message', result.sinkWithoutAck],
    ['sink messages duplicated / foreign', `${result.duplicated} / ${result.foreignSinkMessages}`],
    ['source messages not acked', result.notAcked],
    ['room held (txpush)', perQueue(result.txpushHeld)],
    ['shares left prepared', result.preparedShares],
    ['records left (pending / records)', `${result.pendingLeft} / ${result.recordsLeft}`],
    ['apply intents left (outboxes)', perQueue(result.outboxLeft)],
    [
      'client resends (connection errors / 503 / other 5xx)',
      `${result.connectionErrors} / ${result.unavailable} / ${result.serverErrors}`,
    ],
  ];
  const width = Math.max(...rows.map(([label]) => label.length));
  const table = rows.map(([label, value]) => `${label.padEnd(width)}  ${value}`).join('\n');
  const examples = result.examples.map(
    (example) =>
      `  ${example.id}: ${example.status}, ${example.sinkA}× -a, ${example.sinkB}× -b, attempts ${example.attempts.join(' → ') || 'none'}`,
  );
  const shares = result.preparedShareDetails.map((detail) => `  ${detail}`);
  return [
    table,
    ...(examples.length > 0 ? ['broken source messages:', ...examples] : []),
    ...(shares.length > 0 ? ['shares left prepared:', ...shares] : []),
  ].join('\n');
}

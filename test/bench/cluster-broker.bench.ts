/*
 * The broker's Redis tier scaled out (issue #12, acceptance "benchmarks"; docs/benchmarks.md,
 * "Redis Cluster"): the same push + pop + ack workload over 100 queues, on one shard (a standalone
 * redis-server, the baseline) and on a 3-primary Redis Cluster, measured in the same run.
 * Run after `npm run build`:
 *
 *   node --import tsx test/bench/cluster-broker.bench.ts
 *
 * Two broker nodes (services/broker/dist/main.js, child processes) share the Redis; the client
 * sends every other request to each. Producers push batches of PUSH_BATCH messages, each batch to
 * one queue, queues in turn; consumers own disjoint sets of queues and pop (no wait) + ack batches
 * of POP_BATCH on them while the producers push. A round ends when every message was pushed,
 * popped and acked. Printed per shard: commands/s (INFO total_commands_processed, commands run by
 * the scripts included), script calls/s, CPU (INFO used_cpu_sys + used_cpu_user, share of one
 * core) and the queues whose slot the shard owns; per topology: msg/s (pushed and acked) and the
 * per-shard spread of commands/s around the mean (target: within ±25 %).
 *
 * The Cluster has no replicas (replicas would only compete for the same 2 cores) and the one-shard
 * baseline is standalone Redis, which takes the broker's standalone path (one `notify` channel);
 * `BENCH_MESSAGES` overrides the messages per round.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { once } from 'node:events';
import { setTimeout as sleep } from 'node:timers/promises';
import { fileURLToPath } from 'node:url';
import { freePort, keySlot, RedisCluster, RedisServer, uniquePrefix, waitFor } from '@herald/testkit';
import { Pool } from 'undici';
import { formatCount, formatPercent, printTable, ShardMeter, spread } from './redis-shards.js';

const MAIN = fileURLToPath(new URL('../../services/broker/dist/main.js', import.meta.url));
const QUEUES = 100;
const MESSAGES = Number(process.env.BENCH_MESSAGES ?? 100_000);
const WARMUP_MESSAGES = 10_000;
const PUSH_BATCH = 50;
const POP_BATCH = 50;
const PRODUCERS = 8;
const CONSUMERS = 16;
const CONNECTIONS_PER_NODE = 16;
/** Seconds: a pop lost to a 503 (see `request`) gives its messages back this soon. */
const LEASE_SECONDS = 10;
const PAYLOAD = { orderId: 12345, customer: 'c-42', amount: 99.5, items: ['a', 'b', 'c'] };

interface Topology {
  readonly name: string;
  /** The broker's Redis variables. */
  readonly environment: Record<string, string>;
  /** Each primary's port. */
  readonly primaries: readonly number[];
  /** The primary that owns a slot. */
  primaryForSlot(slot: number): Promise<number>;
  stop(): Promise<void>;
}

async function standalone(): Promise<Topology> {
  const server = await RedisServer.start();
  return {
    name: '1 shard (standalone)',
    environment: { REDIS_URL: server.url },
    primaries: [server.port],
    primaryForSlot: async () => server.port,
    stop: () => server.destroy(),
  };
}

async function cluster(): Promise<Topology> {
  const redis = await RedisCluster.start({ primaries: 3, replicasPerPrimary: 0 });
  return {
    name: '3 shards (Cluster)',
    environment: { REDIS_CLUSTER_NODES: redis.nodes.join(',') },
    primaries: (await redis.primaries()).map((node) => node.port),
    primaryForSlot: (slot) => redis.primaryForSlot(slot),
    stop: () => redis.stop(),
  };
}

interface BrokerNode {
  readonly child: ChildProcess;
  readonly pool: Pool;
}

async function startBroker(environment: Record<string, string>): Promise<BrokerNode> {
  const port = await freePort();
  const child = spawn(process.execPath, [MAIN], {
    env: {
      PATH: process.env.PATH ?? '',
      PORT: String(port),
      HOST: '127.0.0.1',
      LOG_LEVEL: 'error',
      ...environment,
    },
    stdio: ['ignore', 'ignore', 'inherit'],
  });
  const base = `http://127.0.0.1:${port}`;
  await waitFor(async () => (await fetch(`${base}/readyz`).catch(() => undefined))?.status === 200, {
    what: `broker on port ${port}`,
    timeoutMs: 30_000,
  });
  return { child, pool: new Pool(base, { connections: CONNECTIONS_PER_NODE }) };
}

/** 503s answered during the current round (each retried). */
let unavailable = 0;

/**
 * One request; a 503 (the node's 1 s Redis deadline passed: on a CPU-starved machine it does) is
 * retried, as a client is told to (docs/broker-operations.md, Outages). Every route used here is safe to
 * retry: pushes carry their transactionId, acks answer a repeat as the first, and a pop applied
 * but answered 503 leaves its messages leased for the queues' short leaseTime, then popped again.
 */
async function request(pool: Pool, method: 'GET' | 'POST', path: string, body?: unknown) {
  for (;;) {
    const response = await pool.request({
      method,
      path,
      ...(body !== undefined
        ? { body: JSON.stringify(body), headers: { 'content-type': 'application/json' } }
        : {}),
    });
    const text = await response.body.text();
    if (response.statusCode !== 503)
      return { status: response.statusCode, json: text ? JSON.parse(text) : undefined };
    unavailable += 1;
    await sleep(50);
  }
}

const queueName = (index: number) => `bench-${index}`;

/**
 * Pushes `messages` over the queues while consumers pop and ack them; resolves when every one was
 * acked. Requests alternate between the nodes.
 */
async function pushPopAck(nodes: readonly BrokerNode[], messages: number): Promise<void> {
  let turn = 0;
  const pool = () => (nodes[turn++ % nodes.length] as BrokerNode).pool;
  let pushedBatches = 0;
  let acked = 0;
  const batches = messages / PUSH_BATCH;
  const producers = Array.from({ length: PRODUCERS }, async () => {
    while (pushedBatches < batches) {
      const batch = pushedBatches++;
      const queue = queueName(batch % QUEUES);
      const items = Array.from({ length: PUSH_BATCH }, () => ({
        queue,
        partition: 'p0',
        transactionId: randomUUID(),
        payload: PAYLOAD,
      }));
      const reply = await request(pool(), 'POST', '/api/v1/push', { items });
      if (reply.status !== 201) throw new Error(`push answered ${reply.status}`);
    }
  });
  const consumers = Array.from({ length: CONSUMERS }, async (_, consumer) => {
    const owned = Array.from({ length: QUEUES }, (_, index) => index).filter(
      (index) => index % CONSUMERS === consumer,
    );
    while (acked < messages) {
      let found = 0;
      for (const index of owned) {
        const reply = await request(
          pool(),
          'GET',
          `/api/v1/pop/queue/${queueName(index)}?batch=${POP_BATCH}&wait=false`,
        );
        if (reply.status === 204) continue;
        if (reply.status !== 200) throw new Error(`pop answered ${reply.status}`);
        const popped = reply.json.messages as {
          transactionId: string;
          partitionId: string;
          leaseId: string;
        }[];
        const ack = await request(pool(), 'POST', '/api/v1/ack/batch', {
          consumerGroup: null,
          acknowledgments: popped.map(({ transactionId, partitionId, leaseId }) => ({
            transactionId,
            partitionId,
            leaseId,
          })),
        });
        if (ack.status !== 200) throw new Error(`ack answered ${ack.status}`);
        // An ack whose lease ran out fails; its message is popped again.
        const done = (ack.json as { success: boolean }[]).filter((result) => result.success).length;
        found += done;
        acked += done;
      }
      // Nothing in any owned queue: the producers are behind; do not spin on empty pops.
      if (found === 0) await sleep(2);
    }
  });
  await Promise.all([...producers, ...consumers]);
}

interface Result {
  readonly topology: string;
  readonly messagesPerSecond: number;
  /** 503s retried during the measured round. */
  readonly unavailable: number;
  readonly shards: {
    readonly port: number;
    readonly queues: number;
    readonly opsPerSecond: number;
    readonly scriptsPerSecond: number;
    readonly cpuShare: number;
  }[];
}

async function measure(start: () => Promise<Topology>): Promise<Result> {
  const topology = await start();
  const nodes: BrokerNode[] = [];
  const meter = new ShardMeter(topology.primaries);
  try {
    const environment = { ...topology.environment, BROKER_KEY_PREFIX: uniquePrefix('bench-cluster') };
    nodes.push(await startBroker(environment), await startBroker(environment));
    // Queue keys are `<prefix>{<queue>}:…` (docs/broker-storage.md, Storage): the slot of `{<queue>}`.
    const queuesPerShard = new Map<number, number>(topology.primaries.map((port) => [port, 0]));
    for (let index = 0; index < QUEUES; index++) {
      const port = await topology.primaryForSlot(keySlot(`{${queueName(index)}}`));
      queuesPerShard.set(port, (queuesPerShard.get(port) ?? 0) + 1);
    }
    for (let index = 0; index < QUEUES; index++) {
      const reply = await request((nodes[0] as BrokerNode).pool, 'POST', '/api/v1/configure', {
        queue: queueName(index),
        options: { leaseTime: LEASE_SECONDS },
      });
      if (reply.status !== 200) throw new Error(`configure answered ${reply.status}`);
    }
    // Warm-up: every queue registered, scripts loaded, connections open on every node.
    await pushPopAck(nodes, WARMUP_MESSAGES);
    unavailable = 0;
    const before = await meter.sample();
    const started = performance.now();
    await pushPopAck(nodes, MESSAGES);
    const elapsed = (performance.now() - started) / 1000;
    const after = await meter.sample();
    return {
      topology: topology.name,
      messagesPerSecond: MESSAGES / elapsed,
      unavailable,
      shards: ShardMeter.loads(before, after).map((load) => ({
        ...load,
        queues: queuesPerShard.get(load.port) ?? 0,
      })),
    };
  } finally {
    meter.close();
    for (const node of nodes) {
      await node.pool.close();
      node.child.kill('SIGTERM');
      await once(node.child, 'exit');
    }
    await topology.stop();
  }
}

const results = [await measure(standalone), await measure(cluster)];
const baseline = results[0] as Result;

console.log(
  `\nbroker: ${MESSAGES.toLocaleString('en-US')} messages over ${QUEUES} queues, push batch ${PUSH_BATCH}, ` +
    `pop+ack batch ${POP_BATCH}, 2 broker nodes, ${PRODUCERS} producers, ${CONSUMERS} consumers\n`,
);
printTable(
  ['topology', 'shard (port)', 'queues', 'commands/s', 'scripts/s', 'CPU (of a core)'],
  results.flatMap((result) =>
    result.shards.map((shard) => [
      result.topology,
      String(shard.port),
      String(shard.queues),
      formatCount(shard.opsPerSecond),
      formatCount(shard.scriptsPerSecond),
      `${(shard.cpuShare * 100).toFixed(0)} %`,
    ]),
  ),
);
console.log('');
printTable(
  [
    'topology',
    'msg/s (pushed and acked)',
    'vs 1 shard',
    'commands/s: max vs mean',
    'commands/s: min vs mean',
    'CPU: max vs mean',
    'CPU: min vs mean',
    'commands per msg',
    'Redis CPU µs per msg',
    '503s retried',
  ],
  results.map((result) => {
    const ops = spread(result.shards.map((shard) => shard.opsPerSecond));
    const cpu = spread(result.shards.map((shard) => shard.cpuShare));
    const sum = (values: number[]) => values.reduce((total, value) => total + value, 0);
    const commandsPerMessage =
      sum(result.shards.map((shard) => shard.opsPerSecond)) / result.messagesPerSecond;
    const cpuPerMessage =
      (sum(result.shards.map((shard) => shard.cpuShare)) / result.messagesPerSecond) * 1e6;
    return [
      result.topology,
      formatCount(result.messagesPerSecond),
      `${(result.messagesPerSecond / baseline.messagesPerSecond).toFixed(2)}x`,
      formatPercent(ops.above),
      formatPercent(ops.below),
      formatPercent(cpu.above),
      formatPercent(cpu.below),
      commandsPerMessage.toFixed(2),
      cpuPerMessage.toFixed(0),
      String(result.unavailable),
    ];
  }),
);
console.log('\n(spread target: every shard within ±25 % of the mean commands/s; one shard has no spread)');
process.exit(0);

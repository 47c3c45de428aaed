/*
 * The broker soak (docs/reliability.md): two broker nodes on a private Redis with
 * `appendfsync always`, producers and consumers that retry like real clients, and faults
 * injected on the way: kill -9 of a node, kill -9 of Redis, SIGTERM of a node, a Redis outage
 * with an outage probe. Shared by the script (test/soak/broker-soak.ts) and the short test.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { RedisServer, ReplyLossProxy } from '@herald/testkit';
import { MAIN } from '../broker/nodes.js';
import { BrokerLedger, type LedgerCounts, type PoppedMessage } from './broker-ledger.js';
import { OutageProbe, type OutageProbeResult, REFUSAL_BOUND_MS } from './broker-outage.js';
import { ClusterClient } from './client.js';
import { ServiceNode } from './processes.js';
import { loseRepliesWhile, scriptTouching } from './reply-loss.js';

export const BROKER_FAULTS = ['node-kill', 'redis-kill', 'node-sigterm', 'redis-outage'] as const;
export type BrokerFault = (typeof BROKER_FAULTS)[number];

export interface BrokerSoakOptions {
  messages: number;
  partitions: number;
  producers: number;
  consumers: number;
  /** Messages of one partition per push request. */
  pushBatch: number;
  popBatch: number;
  /** Lease of the soak queue, seconds: how long a lease cut holds a partition back. */
  leaseTime: number;
  /** Faults in order, spread evenly over the pushes. */
  faults: readonly BrokerFault[];
  outageMs: number;
  /** Pause between two lost replies of the reply-loss proxy (0: no proxy). */
  replyLossEveryMs: number;
  /** The run gives up when no message was acknowledged for this long. */
  stallMs: number;
  log: (line: string) => void;
}

export const BROKER_SOAK_DEFAULTS: BrokerSoakOptions = {
  messages: 100_000,
  partitions: 16,
  producers: 4,
  consumers: 6,
  pushBatch: 20,
  popBatch: 50,
  leaseTime: 5,
  // Every fault twice (issue #9's acceptance).
  faults: [...BROKER_FAULTS, ...BROKER_FAULTS],
  outageMs: 20_000,
  replyLossEveryMs: 0,
  stallMs: 120_000,
  log: () => undefined,
};

export interface BrokerSoakResult {
  options: Omit<BrokerSoakOptions, 'log'>;
  durationMs: number;
  /** Faults applied, each with how long it took until both nodes were ready again. */
  faults: string[];
  pushed: number;
  notPushed: number;
  lostNeverDelivered: number;
  lostNotAcknowledged: number;
  counts: LedgerCounts;
  ackRefusals: Record<string, number>;
  dlq: number;
  outages: OutageProbeResult[];
  /** 503s answered to the soak's own producers and consumers during outages, and the slowest. */
  clientRefusals: { refused: number; maxMs: number };
  repliesLost: number;
  connectionErrors: number;
  unavailable: number;
  serverErrors: number;
}

export const MAIN_QUEUE = 'soak.main';

export async function runBrokerSoak(overrides: Partial<BrokerSoakOptions> = {}): Promise<BrokerSoakResult> {
  const options = { ...BROKER_SOAK_DEFAULTS, ...overrides };
  const { log, ...settings } = options;
  const perPartition = Array.from(
    { length: options.partitions },
    (_, p) =>
      Math.floor(options.messages / options.partitions) + (p < options.messages % options.partitions ? 1 : 0),
  );
  const ledger = new BrokerLedger(perPartition);
  const started = performance.now();
  const redis = await RedisServer.start({ appendOnly: true });
  const proxy = options.replyLossEveryMs > 0 ? await ReplyLossProxy.start({ port: redis.port }) : undefined;
  const environment = {
    REDIS_URL: proxy?.url ?? redis.url,
    LOG_LEVEL: 'warn',
    SHUTDOWN_TIMEOUT: '5000',
  };
  const nodes: ServiceNode[] = [];
  let client: ClusterClient | undefined;
  try {
    nodes.push(await ServiceNode.start('broker-a', MAIN, environment));
    nodes.push(await ServiceNode.start('broker-b', MAIN, environment));
    const cluster = new ClusterClient(nodes.map((node) => node.origin));
    client = cluster;
    const configured = await cluster.retrying('POST', '/api/v1/configure', {
      queue: MAIN_QUEUE,
      // retryLimit high: a lease cut must redeliver, never dead-letter. Consumed messages stay
      // 120 s so a producer's retry of an applied push is still recognised as a duplicate
      // (docs/broker-api.md: dedup holds while the message is retained).
      options: { leaseTime: options.leaseTime, retryLimit: 1000, completedRetentionSeconds: 120 },
    });
    if (configured?.status !== 200) throw new Error(`configure answered ${configured?.status}`);

    let aborted = false;
    let lastProgress = performance.now();
    let lastCompleted = 0;
    const finished = () => aborted || ledger.completedCount >= options.messages;

    const producer = async (index: number) => {
      const owned = perPartition.map((_, p) => p).filter((p) => p % options.producers === index);
      const next = new Map(owned.map((p) => [p, 0]));
      while (!aborted && owned.some((p) => (next.get(p) as number) < (perPartition[p] as number))) {
        for (const partition of owned) {
          const from = next.get(partition) as number;
          const to = Math.min(from + options.pushBatch, perPartition[partition] as number);
          if (from >= to) continue;
          const items = [];
          for (let seq = from; seq < to; seq++) {
            items.push({
              queue: MAIN_QUEUE,
              partition: `p${partition}`,
              transactionId: `p${partition}-${seq}`,
              payload: { p: partition, s: seq },
            });
          }
          // The same items again until one answer covers them all: a resent push is safe.
          for (;;) {
            const reply = await cluster.retrying('POST', '/api/v1/push', { items }, () => aborted);
            if (!reply) return;
            if (reply.status !== 201) throw new Error(`push answered ${reply.status} ${reply.text}`);
            const results = JSON.parse(reply.text) as { status: string }[];
            if (results.every((result) => result.status === 'queued' || result.status === 'duplicate')) break;
          }
          ledger.pushed(partition, to);
          next.set(partition, to);
        }
      }
    };

    const consumer = async () => {
      const path = `/api/v1/pop/queue/${MAIN_QUEUE}?batch=${options.popBatch}&wait=true&timeout=1000`;
      while (!finished()) {
        const reply = await cluster.retrying('GET', path, undefined, finished);
        if (!reply || reply.status === 204) continue;
        if (reply.status !== 200) throw new Error(`pop answered ${reply.status} ${reply.text}`);
        const messages = (JSON.parse(reply.text) as { messages: PoppedMessage[] }).messages;
        const delivery = ledger.deliver(messages);
        const acknowledgments = messages.map(({ transactionId, partitionId, leaseId }) => ({
          transactionId,
          partitionId,
          leaseId,
          status: 'completed',
        }));
        const answer = await cluster.retrying(
          'POST',
          '/api/v1/ack/batch',
          { acknowledgments },
          () => aborted,
        );
        if (!answer) return;
        if (answer.status !== 200) throw new Error(`ack answered ${answer.status} ${answer.text}`);
        for (const result of JSON.parse(answer.text) as {
          index: number;
          success: boolean;
          error: string | null;
        }[]) {
          const message = messages[result.index] as PoppedMessage;
          if (result.success) ledger.complete(message.transactionId, delivery[result.index] as number);
          else ledger.refused(result.error ?? 'unknown');
        }
      }
    };

    const faultsApplied: string[] = [];
    const outages: OutageProbeResult[] = [];
    let faultRunning = false;
    const bothReady = () => Promise.all(nodes.map((node) => node.waitReady(120_000)));
    const nodeFaults = new Map<BrokerFault, number>();
    const applyFault = async (fault: BrokerFault, round: number) => {
      // Each kind of node fault takes the nodes in turn, so each node is killed and stopped.
      const turn = nodeFaults.get(fault) ?? 0;
      nodeFaults.set(fault, turn + 1);
      const node = nodes[turn % nodes.length] as ServiceNode;
      const begun = performance.now();
      if (fault === 'node-kill') {
        await node.kill9();
        await sleep(500);
        await node.launch();
      } else if (fault === 'node-sigterm') {
        await node.sigterm();
        await node.launch();
      } else if (fault === 'redis-kill') {
        await redis.kill();
        await sleep(500);
        await redis.launch();
        await bothReady();
      } else {
        const probe = new OutageProbe(cluster, round);
        await probe.prepare();
        await redis.kill();
        cluster.setOutage(true);
        const probing = probe.during();
        await sleep(options.outageMs);
        probe.stop();
        await probing;
        cluster.setOutage(false);
        await redis.launch();
        await bothReady();
        outages.push(await probe.verify());
      }
      const label = fault.startsWith('node') ? `${fault} ${node.name}` : fault;
      faultsApplied.push(`${label} (${((performance.now() - begun) / 1000).toFixed(1)} s)`);
      log(`fault ${label} done at ${ledger.acknowledgedCount} pushed, ${ledger.completedCount} acknowledged`);
    };
    const faultRunner = async () => {
      for (const [round, fault] of options.faults.entries()) {
        const threshold = Math.floor(((round + 1) * options.messages) / (options.faults.length + 1));
        while (!aborted && ledger.acknowledgedCount < threshold) await sleep(50);
        if (aborted) return;
        faultRunning = true;
        await applyFault(fault, round);
        faultRunning = false;
        lastProgress = performance.now();
      }
    };
    const replyLoss = async () => {
      if (!proxy) return;
      const running = () => !finished();
      const progress = () => ledger.acknowledgedCount + ledger.completedCount;
      // A queue's keys carry its name as hash tag (docs/broker-storage.md, "Storage").
      await loseRepliesWhile(
        proxy,
        scriptTouching(`{${MAIN_QUEUE}}`),
        running,
        progress,
        options.replyLossEveryMs,
      );
    };
    const watchdog = async () => {
      while (!finished()) {
        await sleep(1000);
        if (ledger.completedCount !== lastCompleted || faultRunning) {
          lastCompleted = ledger.completedCount;
          lastProgress = performance.now();
        } else if (performance.now() - lastProgress > options.stallMs) {
          log(`no message acknowledged for ${options.stallMs / 1000} s: giving up`);
          aborted = true;
        }
        log(`${ledger.acknowledgedCount} pushed, ${ledger.completedCount} acknowledged`);
      }
    };

    const work = Promise.all([
      ...Array.from({ length: options.producers }, (_, index) => producer(index)),
      ...Array.from({ length: options.consumers }, () => consumer()),
      faultRunner(),
      replyLoss(),
      watchdog(),
    ]);
    await work.catch((error: unknown) => {
      aborted = true;
      throw error;
    });

    const dlqReply = await cluster.retrying('GET', `/api/v1/dlq?queue=${MAIN_QUEUE}`);
    const [lostNeverDelivered, lostNotAcknowledged] = ledger.unfinished();
    return {
      options: settings,
      durationMs: performance.now() - started,
      faults: faultsApplied,
      pushed: ledger.acknowledgedCount,
      notPushed: options.messages - ledger.acknowledgedCount,
      lostNeverDelivered,
      lostNotAcknowledged,
      counts: { ...ledger.counts },
      ackRefusals: Object.fromEntries(ledger.ackRefusals),
      dlq: dlqReply?.status === 200 ? (JSON.parse(dlqReply.text) as { total: number }).total : -1,
      outages,
      clientRefusals: { refused: cluster.outage.refused, maxMs: cluster.outage.maxRefusalMs },
      repliesLost: proxy?.lost ?? 0,
      connectionErrors: cluster.connectionErrors,
      unavailable: cluster.unavailable,
      serverErrors: cluster.serverErrors,
    };
  } catch (error) {
    const logs = nodes.map((node) => `--- ${node.name} log tail ---\n${node.logTail()}`).join('\n');
    throw new Error(`${error instanceof Error ? error.message : String(error)}\n${logs}`);
  } finally {
    await client?.close();
    await Promise.all(nodes.map((node) => node.stop()));
    await proxy?.close();
    await redis.destroy();
  }
}

/** Sum of a field over the outage probes. */
function sum(
  result: BrokerSoakResult,
  field: keyof Omit<OutageProbeResult, 'notRefused' | 'slowest'>,
): number {
  return result.outages.reduce((total, outage) => total + outage[field], 0);
}

/** Why the run failed; `latency: false` leaves the refusal time bound out (the in-suite test). */
export function brokerSoakFailures(result: BrokerSoakResult, { latency = true } = {}): string[] {
  const failures: string[] = [];
  const zero = (value: number, what: string) => {
    if (value !== 0) failures.push(`${what}: ${value}`);
  };
  zero(result.notPushed, 'messages never acknowledged by the broker (run gave up)');
  zero(result.lostNeverDelivered + result.lostNotAcknowledged, 'lost');
  zero(result.counts.duplicatesUnexplained, 'unexplained duplicates');
  zero(result.counts.fifoViolations, 'FIFO violations');
  zero(result.counts.neverPushed, 'never pushed but delivered');
  zero(result.dlq, 'dead-lettered');
  zero(
    sum(result, 'refusedPushesApplied') + sum(result, 'refusedPopApplied') + sum(result, 'refusedAckApplied'),
    'refused during the outage but applied',
  );
  const notRefused = result.outages.flatMap((outage) => outage.notRefused);
  if (notRefused.length > 0) failures.push(`outage probes not answered 503: ${notRefused.join(', ')}`);
  if (latency) zero(sum(result, 'late'), `outage probes answered 503 after more than ${REFUSAL_BOUND_MS} ms`);
  return failures;
}

/** The printed table (docs/reliability.md explains each row). */
export function formatBrokerTable(result: BrokerSoakResult): string {
  const { counts } = result;
  const maxProbeMs = Math.max(0, ...result.outages.map((outage) => outage.maxRefusalMs));
  const refusals = Object.entries(result.ackRefusals)
    .map(([error, count]) => `${count}× ${error}`)
    .join('; ');
  const rows: [string, string | number][] = [
    ['messages / partitions', `${result.options.messages} / ${result.options.partitions}`],
    ['duration', `${(result.durationMs / 1000).toFixed(0)} s`],
    ['faults', result.faults.join(', ') || 'none'],
    ['pushed (answered 201)', result.pushed],
    [
      'lost (never delivered / delivered, never acked)',
      `${result.lostNeverDelivered} / ${result.lostNotAcknowledged}`,
    ],
    ['deliveries', counts.deliveries],
    ['duplicates explained by lease cuts', counts.duplicatesExplained],
    ['duplicates unexplained', counts.duplicatesUnexplained],
    ['redeliveries after an unseen pop (lease cut)', counts.unseenLeaseCuts],
    ['FIFO violations', counts.fifoViolations],
    ['never pushed but delivered', counts.neverPushed],
    ['DLQ', result.dlq],
    ['ack refusals', refusals || 'none'],
    [
      'outage probes (push/pop/ack) answered 503',
      `${sum(result, 'probes')} sent, ${result.outages.flatMap((o) => o.notRefused).length} not 503`,
    ],
    [
      'outage 503 max latency (probes / all clients)',
      `${maxProbeMs.toFixed(0)} ms / ${result.clientRefusals.maxMs.toFixed(0)} ms (bound ${REFUSAL_BOUND_MS} ms)`,
    ],
    ['slowest probe per outage', result.outages.map((outage) => outage.slowest).join('; ') || 'none'],
    ['503s to soak clients during outages', result.clientRefusals.refused],
    ['refused pushes / applied', `${sum(result, 'refusedPushes')} / ${sum(result, 'refusedPushesApplied')}`],
    [
      'refused pop applied / refused ack applied',
      `${sum(result, 'refusedPopApplied')} / ${sum(result, 'refusedAckApplied')}`,
    ],
    ['replies lost by the proxy', result.repliesLost],
    [
      'client resends (connection errors / 503 / other 5xx)',
      `${result.connectionErrors} / ${result.unavailable} / ${result.serverErrors}`,
    ],
  ];
  const width = Math.max(...rows.map(([label]) => label.length));
  return rows.map(([label, value]) => `${label.padEnd(width)}  ${value}`).join('\n');
}

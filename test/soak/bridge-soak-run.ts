/*
 * The bridge soak (issue #25, the crash acceptance test): two broker nodes and two hub nodes on a
 * private Redis with `appendfsync always`, one bridged queue, producers that push with their own
 * transactionIds and retry like real clients, and on the way kill -9 of a broker node, of a hub
 * node and of Redis, plus replies of the push, outbox-take and outbox-done scripts lost between
 * one broker node and Redis. Once every outbox is empty it counts, from the hub's history in
 * Redis, the updates of each message by id (none missing, none twice, each partition in the
 * order of the broker's stream), and checks that a subscriber moved from one hub node to the
 * other with Last-Event-ID received every update. Shared by the script and the short test:
 *
 *   node --import tsx test/soak/bridge-soak.ts --messages 100000
 */
import type { ClientRequest } from 'node:http';
import { setTimeout as sleep } from 'node:timers/promises';
import { entryFields, loadBrokerScripts } from '@herald/broker';
import { RedisServer, ReplyLossProxy, scriptCall, waitFor } from '@herald/testkit';
import { Redis } from 'ioredis';
import { PUBLISHER_SECRET, SUBSCRIBER_SECRET } from '../../services/hub/test/helpers.js';
import { MAIN as BROKER_MAIN } from '../broker/nodes.js';
import { HUB_MAIN } from '../hub/support.js';
import { ClusterClient } from './client.js';
import { ServiceNode } from './processes.js';
import { streamEventIds } from './sse-subscriber.js';

export const BRIDGE_FAULTS = ['broker-kill', 'hub-kill', 'redis-kill'] as const;
export type BridgeFault = (typeof BRIDGE_FAULTS)[number];

/** The scripts whose replies the proxy loses (push: where the intent is written; the relay's two). */
export const LOST_SCRIPTS = ['push', 'outbox-take', 'outbox-done'] as const;
type LostScript = (typeof LOST_SCRIPTS)[number];

export interface BridgeSoakOptions {
  messages: number;
  /** Partitions of the bridged queue, one hub topic each. */
  partitions: number;
  /** Each producer pushes the partitions `p % producers === index`, each in order. */
  producers: number;
  /** Messages of one partition per push request. */
  pushBatch: number;
  /** Messages pushed per second over all producers (0: as fast as answered). */
  pushRate: number;
  /** Faults in order, spread evenly over the pushes. */
  faults: readonly BridgeFault[];
  /** Pause between two lost replies of the reply-loss proxy (0: no proxy). */
  replyLossEveryMs: number;
  /** After the last push, how long the outboxes may take to empty. */
  drainTimeoutMs: number;
  /** After that, how long the subscriber may go without receiving anything before it is counted. */
  settleMs: number;
  log: (line: string) => void;
}

export const BRIDGE_SOAK_DEFAULTS: BridgeSoakOptions = {
  messages: 100_000,
  partitions: 8,
  producers: 4,
  pushBatch: 20,
  pushRate: 1000,
  // Every fault twice, each node of a pair once.
  faults: [...BRIDGE_FAULTS, ...BRIDGE_FAULTS],
  replyLossEveryMs: 300,
  drainTimeoutMs: 1_800_000,
  settleMs: 20_000,
  log: () => undefined,
};

/** What the subscriber of the Last-Event-ID check saw over all its connections. */
export interface BridgeSubscriberResult {
  /** Distinct updates received. */
  received: number;
  /** Messages pushed whose update it never received. */
  missed: number;
  /** Updates received a second time. */
  duplicates: number;
  /** Updates received after a later message of the same partition (first receipts only). */
  outOfOrder: number;
  /** Updates whose id names no pushed message. */
  unknown: number;
  /** The moment it was moved from hub node 1 to hub node 2: the Last-Event-ID it resumed with. */
  movedWith: string | undefined;
  /** Reconnections that were not the planned move (the node or Redis was killed under it). */
  reconnects: number;
  /** Answers other than 200 to a (re)connection. */
  refusedConnections: number;
}

export interface BridgeSoakResult {
  options: Omit<BridgeSoakOptions, 'log'>;
  durationMs: number;
  /** Faults applied, each with how long it took until the nodes were ready again. */
  faults: string[];
  /** Messages answered 201 (queued or duplicate) with a message id. */
  pushed: number;
  notPushed: number;
  /** Entries of the queue's partition streams in the broker. */
  streamEntries: number;
  /** Answered messages with no entry in the broker's stream (a write Redis lost). */
  streamAbsent: number;
  /** Stream entries no producer was answered with (a push stored twice). */
  streamUnanswered: number;
  /** Intents left in the outbox when the run stopped waiting, and those the hub refused for good. */
  outboxPending: number;
  outboxRefused: number;
  /** Entries of the hub's history. */
  hubUpdates: number;
  /** Pushed messages with no update in the hub's history. */
  missing: number;
  /** Message ids with more than one update, and the updates beyond the first. */
  duplicatedIds: number;
  duplicateUpdates: number;
  /** Updates that come, in the hub's history, after a later message of their partition. */
  reordered: number;
  /** Updates on the wrong topic, or whose data does not describe their message. */
  malformed: number;
  /** Updates whose id names no pushed message. */
  unknownUpdates: number;
  /**
   * Publishes the hub answered from history because the id was there already: intents relayed
   * again after a crash or a lost answer (summed over the hub nodes' runs). Above 0, the hub's
   * dedup by id was what kept them from being delivered twice.
   */
  hubRepeats: number;
  subscriber: BridgeSubscriberResult;
  repliesLost: Record<LostScript, number>;
  connectionErrors: number;
  unavailable: number;
  serverErrors: number;
}

export const BRIDGE_QUEUE = 'soak.bridge';
export const TOPIC_TEMPLATE = 'https://example.com/orders/{partition}';
const BROKER_PREFIX = 'bridge-soak:broker:';
const HUB_PREFIX = 'bridge-soak:hub:';
const partitionName = (partition: number) => `p${partition}`;
const topicOf = (partition: number) =>
  TOPIC_TEMPLATE.replace('{partition}', encodeURIComponent(partitionName(partition)));
const UPDATE_ID_PREFIX = 'urn:herald:pushed:';
/** Operations that must succeed between two lost replies (see reply-loss.ts). */
const PROGRESS_BETWEEN_LOSSES = 20;
/** Between closing the subscriber on hub node 1 and resuming it on hub node 2: updates go by. */
const MOVE_GAP_MS = 500;
const PAGE = 10_000;
/** A node fault waits (at most FAULT_BACKLOG_WAIT_MS) for this many intents in the outbox, so it hits a relay at work. */
const FAULT_BACKLOG = 20;
const FAULT_BACKLOG_WAIT_MS = 10_000;

/** Where each pushed message is: its partition and its sequence number there. */
interface Pushed {
  readonly partition: number;
  readonly seq: number;
}

/**
 * The subscriber of the Last-Event-ID check: one connection at a time to its current hub node,
 * opened before the first push. When a connection ends (its node or Redis killed) it reconnects
 * to the same node with `Last-Event-ID` set to the last id received; `moveTo` closes it and
 * resumes the same way on another node.
 */
class ResumingBridgeSubscriber {
  /** Update id -> times received. */
  readonly received = new Map<string, number>();
  /** First receipts, in order. */
  readonly order: string[] = [];
  private lastEventId: string | undefined;
  private request: ClientRequest | undefined;
  private stopped = false;
  private moving: Promise<void> | undefined;
  private running: Promise<void> | undefined;
  reconnects = 0;
  refusedConnections = 0;
  movedWith: string | undefined;

  constructor(
    private url: string,
    private readonly query: string,
  ) {}

  get distinct(): number {
    return this.order.length;
  }

  /** Resolves once the first stream is open (its opening comment arrived). */
  async start(): Promise<void> {
    let opened!: () => void;
    const open = new Promise<void>((resolve) => {
      opened = resolve;
    });
    this.running = this.loop(opened);
    await open;
  }

  /** Closes the connection and, after MOVE_GAP_MS, resumes on `url` with Last-Event-ID. */
  async moveTo(url: string): Promise<void> {
    let resume!: () => void;
    this.moving = new Promise((resolve) => {
      resume = resolve;
    });
    this.url = url;
    this.request?.destroy();
    await sleep(MOVE_GAP_MS);
    this.movedWith = this.lastEventId ?? 'earliest';
    resume();
  }

  private async loop(opened: () => void): Promise<void> {
    let backoff = 50;
    let first = true;
    while (!this.stopped) {
      if (this.moving) {
        await this.moving;
        this.moving = undefined;
      } else if (!first) {
        this.reconnects += 1;
      }
      first = false;
      const status = await this.stream(`${this.url}?${this.query}`, opened).catch(() => 0);
      if (this.stopped) return;
      if (status !== 200) {
        this.refusedConnections += 1;
        await sleep(backoff * (0.5 + Math.random()));
        backoff = Math.min(backoff * 2, 1000);
      } else {
        backoff = 50;
      }
      // Opened before the first push: a stream that ends before any update resumes from the start.
      this.lastEventId ??= 'earliest';
    }
  }

  /** One connection; resolves with its status once it ended. */
  private stream(url: string, opened: () => void): Promise<number> {
    return streamEventIds(url, {
      lastEventId: this.lastEventId,
      opened,
      event: (id) => this.receive(id),
      started: (request) => {
        this.request = request;
      },
    });
  }

  private receive(id: string): void {
    this.lastEventId = id;
    const times = this.received.get(id) ?? 0;
    this.received.set(id, times + 1);
    if (times === 0) this.order.push(id);
  }

  async stop(): Promise<void> {
    this.stopped = true;
    this.request?.destroy();
    await this.running;
  }
}

/** Every entry of a stream, read in pages. */
async function readStream(redis: Redis, key: string): Promise<[string, string[]][]> {
  const entries: [string, string[]][] = [];
  let start = '-';
  for (;;) {
    const page = (await redis.xrange(key, start, '+', 'COUNT', PAGE)) as [string, string[]][];
    entries.push(...page);
    const last = page[page.length - 1];
    if (page.length < PAGE || !last) return entries;
    start = `(${last[0]}`;
  }
}

const field = (fields: readonly string[], name: string) => fields[fields.indexOf(name) + 1] ?? '';

/** A hub node's `mercure_updates_repeated_total` (0 when it cannot be read). */
async function hubRepeatsOf(node: ServiceNode): Promise<number> {
  try {
    const metrics = await (await fetch(`${node.origin}/metrics`)).text();
    return Number(/^mercure_updates_repeated_total(?:\{[^}]*\})? (\S+)$/m.exec(metrics)?.[1] ?? 0);
  } catch {
    return 0;
  }
}

/**
 * Loses replies of each script of LOST_SCRIPTS on the proxied node, one script's at a time per
 * script: a trap for each stays armed until that script runs there (the relay's scripts run on
 * this node only while its relay holds the outbox), then, after `pauseMs` and some progress of
 * what that script serves, the next (see reply-loss.ts). Progress counts pushes answered for the
 * push, updates delivered for the relay's scripts: losing every take of a relay would hold the
 * outbox (its lock is renewed by each take) without a single done. When the run ends, traps still armed are disarmed, not removed, since
 * the proxy has no call for that.
 */
async function loseBridgeReplies(
  proxy: ReplyLossProxy,
  running: () => boolean,
  progress: (script: LostScript) => number,
  pauseMs: number,
  lost: Record<LostScript, number>,
): Promise<void> {
  const scripts = loadBrokerScripts();
  const loseEach = async (name: LostScript) => {
    const script = scripts.get(name);
    if (!script) throw new Error(`no broker script ${name}`);
    const matches = scriptCall(script);
    while (running()) {
      let fired = false;
      const trap = proxy
        .loseNextReply((request, index) => running() && matches(request, index))
        .then(() => {
          fired = true;
          lost[name] += 1;
        });
      while (!fired && running()) await Promise.race([trap, sleep(200)]);
      if (!fired) return;
      const mark = progress(name);
      await sleep(pauseMs);
      while (running() && progress(name) < mark + PROGRESS_BETWEEN_LOSSES) await sleep(50);
    }
  };
  await Promise.all(LOST_SCRIPTS.map(loseEach));
}

export async function runBridgeSoak(overrides: Partial<BridgeSoakOptions> = {}): Promise<BridgeSoakResult> {
  const options = { ...BRIDGE_SOAK_DEFAULTS, ...overrides };
  const { log, ...settings } = options;
  const perPartition = Array.from(
    { length: options.partitions },
    (_, p) =>
      Math.floor(options.messages / options.partitions) + (p < options.messages % options.partitions ? 1 : 0),
  );
  /** The message id each message was answered with, per partition and sequence number. */
  const messageIds = perPartition.map((count) => new Array<string | undefined>(count));
  let pushedCount = 0;
  const started = performance.now();
  const redis = await RedisServer.start({ appendOnly: true });
  const proxy = options.replyLossEveryMs > 0 ? await ReplyLossProxy.start({ port: redis.port }) : undefined;
  const hubEnvironment = {
    REDIS_URL: redis.url,
    MERCURE_REDIS_PREFIX: HUB_PREFIX,
    // Loopback HTTP counts as secure (the broker publishes over plain http to 127.0.0.1).
    MERCURE_DEV: '1',
    MERCURE_ANONYMOUS: '1',
    MERCURE_PUBLISHER_JWT_KEY: PUBLISHER_SECRET,
    MERCURE_SUBSCRIBER_JWT_KEY: SUBSCRIBER_SECRET,
    // Every update stays in history: the hub's dedup by id holds while it is there (docs/hub.md,
    // "Resent publishes"), and the resumed subscriber must find all. One partition (the default):
    // the history is the one stream `<prefix>{hub}:history`.
    MERCURE_HISTORY_SIZE: String(Math.max(10_000, options.messages * 2)),
    LOG_LEVEL: 'warn',
    SHUTDOWN_TIMEOUT: '5s',
  };
  const hubs: ServiceNode[] = [];
  const brokers: ServiceNode[] = [];
  const allNodes = () => [...hubs, ...brokers];
  let subscriber: ResumingBridgeSubscriber | undefined;
  let client: ClusterClient | undefined;
  // Reads the harness makes during the run and the final counts, straight from Redis.
  const reader = new Redis({ host: '127.0.0.1', port: redis.port, lazyConnect: true });
  reader.on('error', () => undefined);
  try {
    await reader.connect();
    hubs.push(await ServiceNode.start('hub-1', HUB_MAIN, hubEnvironment));
    hubs.push(await ServiceNode.start('hub-2', HUB_MAIN, hubEnvironment));
    // Each broker node relays to its own hub node; the second reaches Redis through the proxy.
    for (const [index, hub] of hubs.entries()) {
      brokers.push(
        await ServiceNode.start(`broker-${index + 1}`, BROKER_MAIN, {
          REDIS_URL: index === 1 && proxy ? proxy.url : redis.url,
          BROKER_KEY_PREFIX: BROKER_PREFIX,
          BROKER_HUB_URL: `${hub.origin}/.well-known/mercure`,
          BROKER_HUB_JWT_KEY: PUBLISHER_SECRET,
          LOG_LEVEL: 'warn',
          SHUTDOWN_TIMEOUT: '5000',
        }),
      );
    }
    const cluster = new ClusterClient(brokers.map((node) => node.origin));
    client = cluster;
    const configured = await cluster.retrying('POST', '/api/v1/configure', {
      queue: BRIDGE_QUEUE,
      options: { bridgeTopic: TOPIC_TEMPLATE },
    });
    if (configured?.status !== 200)
      throw new Error(`configure answered ${configured?.status} ${configured?.text}`);

    const query = perPartition.map((_, p) => `match=${encodeURIComponent(topicOf(p))}`).join('&');
    const hubUrl = (node: ServiceNode) => `${node.origin}/.well-known/mercure`;
    const resuming = new ResumingBridgeSubscriber(hubUrl(hubs[0] as ServiceNode), query);
    subscriber = resuming;
    await resuming.start();

    let aborted = false;
    let producing = true;
    let draining = true;
    let reserved = 0;
    const pushStarted = performance.now();
    const producer = async (index: number) => {
      const owned = perPartition.map((_, p) => p).filter((p) => p % options.producers === index);
      const next = new Map(owned.map((p) => [p, 0]));
      while (!aborted && owned.some((p) => (next.get(p) as number) < (perPartition[p] as number))) {
        for (const partition of owned) {
          const from = next.get(partition) as number;
          const to = Math.min(from + options.pushBatch, perPartition[partition] as number);
          if (from >= to) continue;
          if (options.pushRate > 0) {
            reserved += to - from;
            const due = pushStarted + (reserved / options.pushRate) * 1000;
            await sleep(Math.max(0, due - performance.now()));
          }
          const items = [];
          for (let seq = from; seq < to; seq++) {
            items.push({
              queue: BRIDGE_QUEUE,
              partition: partitionName(partition),
              transactionId: `p${partition}-${seq}`,
              payload: { p: partition, s: seq },
            });
          }
          // The same items again until one answer covers them all: dedup by transactionId
          // answers a resent push with the message id stored the first time.
          let results: { status: string; message_id: string }[];
          for (;;) {
            const reply = await cluster.retrying('POST', '/api/v1/push', { items }, () => aborted);
            if (!reply) return;
            if (reply.status !== 201) throw new Error(`push answered ${reply.status} ${reply.text}`);
            results = JSON.parse(reply.text) as { status: string; message_id: string }[];
            if (results.every((result) => result.status === 'queued' || result.status === 'duplicate')) break;
          }
          const ids = messageIds[partition] as (string | undefined)[];
          for (const [offset, result] of results.entries()) ids[from + offset] = result.message_id;
          pushedCount += to - from;
          next.set(partition, to);
        }
      }
    };

    const outboxBase = `${BROKER_PREFIX}{${encodeURIComponent(BRIDGE_QUEUE)}}:`;
    const takeCall = scriptCall(loadBrokerScripts().get('outbox-take') as { sha: string; source: string });
    /** Relays of killed broker runs: their lock lapses on its own, 15 s after their last take. */
    const killedRelays = new Set<string>();
    let lastHolder: string | null = null;
    /**
     * Which broker node's relay holds the queue's outbox now (outbox-take-1.lua's lock), if known:
     * the proxied node's takes name its relay (ARGV[1]); a holder the proxy never saw is the other
     * node's, unless it is a killed run's of the proxied node.
     */
    const relayHolder = async (): Promise<number | undefined> => {
      const holder = await reader.get(`${outboxBase}obl`).catch(() => null);
      lastHolder = holder;
      if (!proxy || !holder) return undefined;
      const proxiedRelays: string[] = [];
      for (const [index, request] of proxy.seen.entries()) {
        if (takeCall(request, index)) proxiedRelays.push(request[4] ?? '');
      }
      if (killedRelays.has(holder)) return undefined;
      if (holder === proxiedRelays[proxiedRelays.length - 1]) return 1;
      return proxiedRelays.includes(holder) ? undefined : 0;
    };
    /** Waits a little for intents in the outbox: a crash then hits a relay with work in hand. */
    const backlog = async (): Promise<number> => {
      const until = performance.now() + FAULT_BACKLOG_WAIT_MS;
      let waiting = 0;
      while (!aborted && performance.now() < until) {
        waiting = await reader.xlen(`${outboxBase}ob`).catch(() => 0);
        if (waiting >= FAULT_BACKLOG) break;
        await sleep(20);
      }
      return waiting;
    };
    /**
     * Waits a little for the outbox's first intent to be in the hub's history already: published
     * by the relay holding the outbox, not yet removed. A crash of that relay then leaves it to be
     * relayed again, which the hub must answer from history (`hubRepeats`).
     */
    const publishedNotRemoved = async (): Promise<boolean> => {
      const until = performance.now() + FAULT_BACKLOG_WAIT_MS;
      while (!aborted && performance.now() < until) {
        const head = (await reader.xrange(`${outboxBase}ob`, '-', '+', 'COUNT', 1).catch(() => []))[0];
        const messageId = head ? field(head[1], 'm') : '';
        if (messageId !== '') {
          const recent = await reader
            .xrevrange(`${HUB_PREFIX}{hub}:history`, '+', '-', 'COUNT', 1000)
            .catch(() => []);
          const id = JSON.stringify(UPDATE_ID_PREFIX + messageId);
          if (recent.some(([, fields]) => field(fields, 'u').startsWith(`[${id},`))) return true;
        }
        await sleep(5);
      }
      return false;
    };
    let hubRepeats = 0;
    const faultsApplied: string[] = [];
    const turns = new Map<BridgeFault, number>();
    const applyFault = async (fault: BridgeFault) => {
      const waiting = await backlog();
      // The broker kill hits the relay between its publish and its removal of an intent.
      const inFlight = fault === 'broker-kill' && (await publishedNotRemoved());
      // A node fault takes the relaying broker node or the hub node it publishes to (broker n
      // relays to hub n); when that is not known, the nodes of the pair in turn.
      const turn = turns.get(fault) ?? 0;
      turns.set(fault, turn + 1);
      const holder = await relayHolder();
      const pair = fault === 'hub-kill' ? hubs : brokers;
      const node = pair[holder ?? turn % pair.length] as ServiceNode;
      const begun = performance.now();
      if (fault === 'redis-kill') {
        await redis.kill();
        await sleep(500);
        await redis.launch();
        await Promise.all(allNodes().map((each) => each.waitReady(120_000)));
      } else {
        // The killed hub's counter is lost with it: read it just before.
        if (fault === 'hub-kill') hubRepeats += await hubRepeatsOf(node);
        if (fault === 'broker-kill' && holder !== undefined && lastHolder) killedRelays.add(lastHolder);
        await node.kill9();
        if (fault === 'broker-kill' && holder !== undefined) {
          // The other node's relay takes the outbox over once the killed run's lock lapsed; the
          // node comes back after that, so the relays of both nodes work (and meet the proxy).
          await waitFor(
            async () => {
              const now = await reader.get(`${outboxBase}obl`);
              return now !== null && !killedRelays.has(now);
            },
            { what: 'the other relay holding the outbox', timeoutMs: 30_000, intervalMs: 100 },
          ).catch(() => log('the other relay did not take the outbox over within 30 s'));
        }
        await sleep(500);
        await node.launch();
      }
      const target =
        fault === 'redis-kill' ? '' : ` ${node.name}${holder === undefined ? '' : ' (relaying)'}`;
      const label = `${fault}${target}, ${waiting} intents waiting${inFlight ? ', the first one published' : ''}`;
      faultsApplied.push(`${label} (${((performance.now() - begun) / 1000).toFixed(1)} s)`);
      log(`fault ${label} done at ${pushedCount} pushed, ${resuming.distinct} received`);
    };
    const faultRunner = async () => {
      for (const [round, fault] of options.faults.entries()) {
        const threshold = Math.floor(((round + 1) * options.messages) / (options.faults.length + 1));
        while (!aborted && pushedCount < threshold) await sleep(50);
        if (aborted) return;
        await applyFault(fault);
      }
    };
    // Mid-run, between the faults' points: closed on hub node 1, resumed on hub node 2.
    const mover = async () => {
      const threshold = Math.floor(options.messages * 0.4);
      while (!aborted && pushedCount < threshold) await sleep(50);
      if (aborted) return;
      await resuming.moveTo(hubUrl(hubs[1] as ServiceNode));
      log(`subscriber moved to ${hubs[1]?.name} with Last-Event-ID ${resuming.movedWith}`);
    };
    const repliesLost: Record<LostScript, number> = { push: 0, 'outbox-take': 0, 'outbox-done': 0 };
    const replyLoss = async () => {
      if (!proxy) return;
      await loseBridgeReplies(
        proxy,
        () => draining && !aborted,
        (script) => (script === 'push' ? pushedCount : resuming.distinct),
        options.replyLossEveryMs,
        repliesLost,
      );
    };
    const progress = async () => {
      while (draining && !aborted) {
        await sleep(1000);
        log(
          `${pushedCount} pushed, ${resuming.distinct} received; resends: ${cluster.connectionErrors} connection errors, ${cluster.unavailable} 503, ${cluster.serverErrors} other 5xx (last: ${cluster.lastRefusal})`,
        );
      }
    };

    // Once the producers are done, until the queue's outbox is empty (or the drain timeout).
    let outboxPending = -1;
    let outboxRefused = -1;
    const drain = async () => {
      const deadline = performance.now() + options.drainTimeoutMs;
      while (!aborted) {
        const reply = await cluster.retrying('GET', '/api/v1/outbox', undefined, () => aborted);
        if (reply?.status === 200) {
          const rows = (
            JSON.parse(reply.text) as { outboxes: { queue: string; pending: number; refused: number }[] }
          ).outboxes;
          const row = rows.find((each) => each.queue === BRIDGE_QUEUE);
          outboxPending = rows.reduce((sum, each) => sum + each.pending, 0);
          outboxRefused = rows.reduce((sum, each) => sum + each.refused, 0);
          if (row && outboxPending === 0) return;
        }
        if (performance.now() > deadline) {
          log(`outbox not empty after ${options.drainTimeoutMs / 1000} s: ${outboxPending} pending`);
          return;
        }
        await sleep(500);
      }
    };

    await Promise.all([
      Promise.all([
        Promise.all(Array.from({ length: options.producers }, (_, index) => producer(index))).finally(() => {
          producing = false;
        }),
        faultRunner(),
        mover(),
      ])
        .then(drain)
        .finally(() => {
          draining = false;
        }),
      replyLoss(),
      progress(),
    ]).catch((error: unknown) => {
      aborted = true;
      throw error;
    });
    log(
      `producers ${producing ? 'stopped' : 'done'}, outbox ${outboxPending} pending; waiting for the subscriber`,
    );

    // The subscriber catches up with everything pushed, or stops receiving for settleMs.
    const answered = new Map<string, Pushed>();
    for (const [partition, ids] of messageIds.entries()) {
      for (const [seq, id] of ids.entries()) if (id !== undefined) answered.set(id, { partition, seq });
    }
    const caughtUp = () => [...answered.keys()].every((id) => resuming.received.has(UPDATE_ID_PREFIX + id));
    let lastReceived = -1;
    let quietSince = performance.now();
    while (!caughtUp() && performance.now() - quietSince < options.settleMs) {
      await sleep(200);
      if (resuming.distinct !== lastReceived) {
        lastReceived = resuming.distinct;
        quietSince = performance.now();
      }
    }
    await resuming.stop();
    for (const hub of hubs) hubRepeats += await hubRepeatsOf(hub);

    // Counted from Redis itself: the broker's partition streams and the hub's history.
    /** Message id -> its index in its partition's stream. */
    const streamIndex = new Map<string, number>();
    let streamEntries = 0;
    let streamUnanswered = 0;
    for (let p = 0; p < options.partitions; p++) {
      const key = `${outboxBase}s:${encodeURIComponent(partitionName(p))}`;
      for (const [index, [, fields]] of (await readStream(reader, key)).entries()) {
        const { id } = entryFields(fields);
        streamEntries += 1;
        if (answered.get(id)?.partition !== p) streamUnanswered += 1;
        streamIndex.set(id, index);
      }
    }
    const history = await readStream(reader, `${HUB_PREFIX}{hub}:history`);
    const streamAbsent = [...answered.keys()].filter((id) => !streamIndex.has(id)).length;

    const updates = new Map<string, number>();
    const highest = new Array<number>(options.partitions).fill(-1);
    let reordered = 0;
    let malformed = 0;
    let unknownUpdates = 0;
    for (const [, fields] of history) {
      const [id, topics, data] = JSON.parse(field(fields, 'u')) as [string, string[], string];
      const messageId = id.startsWith(UPDATE_ID_PREFIX) ? id.slice(UPDATE_ID_PREFIX.length) : '';
      const pushed = answered.get(messageId);
      if (!pushed) {
        unknownUpdates += 1;
        continue;
      }
      const times = updates.get(messageId) ?? 0;
      updates.set(messageId, times + 1);
      const body = JSON.parse(data) as Record<string, unknown>;
      const payload = body.data as { p?: number; s?: number } | undefined;
      if (
        topics.length !== 1 ||
        topics[0] !== topicOf(pushed.partition) ||
        body.queue !== BRIDGE_QUEUE ||
        body.partition !== partitionName(pushed.partition) ||
        body.messageId !== messageId ||
        body.transactionId !== `p${pushed.partition}-${pushed.seq}` ||
        body.event !== 'pushed' ||
        payload?.p !== pushed.partition ||
        payload?.s !== pushed.seq
      ) {
        malformed += 1;
      }
      if (times > 0) continue;
      const index = streamIndex.get(messageId) ?? -1;
      if (index < (highest[pushed.partition] as number)) reordered += 1;
      else highest[pushed.partition] = index;
    }
    const duplicated = [...updates.values()].filter((times) => times > 1);

    // The subscriber's view: the union of its connections.
    const subscriberHighest = new Array<number>(options.partitions).fill(-1);
    let outOfOrder = 0;
    let unknown = 0;
    for (const id of resuming.order) {
      const messageId = id.startsWith(UPDATE_ID_PREFIX) ? id.slice(UPDATE_ID_PREFIX.length) : '';
      const pushed = answered.get(messageId);
      if (!pushed) {
        unknown += 1;
        continue;
      }
      const index = streamIndex.get(messageId) ?? -1;
      if (index < (subscriberHighest[pushed.partition] as number)) outOfOrder += 1;
      else subscriberHighest[pushed.partition] = index;
    }

    return {
      options: settings,
      durationMs: performance.now() - started,
      faults: faultsApplied,
      pushed: answered.size,
      notPushed: options.messages - answered.size,
      streamEntries,
      streamAbsent,
      streamUnanswered,
      outboxPending,
      outboxRefused,
      hubUpdates: history.length,
      missing: [...answered.keys()].filter((id) => !updates.has(id)).length,
      duplicatedIds: duplicated.length,
      duplicateUpdates: duplicated.reduce((sum, times) => sum + times - 1, 0),
      reordered,
      malformed,
      unknownUpdates,
      hubRepeats,
      subscriber: {
        received: resuming.distinct,
        missed: [...answered.keys()].filter((id) => !resuming.received.has(UPDATE_ID_PREFIX + id)).length,
        duplicates: [...resuming.received.values()].reduce((sum, times) => sum + times - 1, 0),
        outOfOrder,
        unknown,
        movedWith: resuming.movedWith,
        reconnects: resuming.reconnects,
        refusedConnections: resuming.refusedConnections,
      },
      repliesLost,
      connectionErrors: cluster.connectionErrors,
      unavailable: cluster.unavailable,
      serverErrors: cluster.serverErrors,
    };
  } catch (error) {
    const logs = allNodes()
      .map((node) => `--- ${node.name} log tail ---\n${node.logTail()}`)
      .join('\n');
    throw new Error(`${error instanceof Error ? error.message : String(error)}\n${logs}`);
  } finally {
    reader.disconnect();
    await subscriber?.stop();
    await client?.close();
    await Promise.all(allNodes().map((node) => node.stop()));
    await proxy?.close();
    await redis.destroy();
  }
}

/** Why the run failed: every count here must be zero. */
export function bridgeSoakFailures(result: BridgeSoakResult): string[] {
  const failures: string[] = [];
  const zero = (value: number, what: string) => {
    if (value !== 0) failures.push(`${what}: ${value}`);
  };
  zero(result.notPushed, 'messages never answered by the broker (run gave up)');
  zero(result.streamAbsent, 'answered messages absent from the broker stream');
  zero(result.streamUnanswered, 'broker stream entries no producer was answered with');
  zero(result.outboxPending, 'intents left in the outbox');
  zero(result.outboxRefused, 'intents the hub refused for good');
  zero(result.missing, 'messages with no hub update');
  zero(result.duplicatedIds, 'messages with more than one hub update');
  zero(result.reordered, 'hub updates out of their partition order');
  zero(result.malformed, 'hub updates on a wrong topic or with wrong data');
  zero(result.unknownUpdates, 'hub updates of no pushed message');
  const { subscriber } = result;
  zero(subscriber.missed, 'updates the resumed subscriber missed');
  zero(subscriber.duplicates, 'updates the resumed subscriber received twice');
  zero(subscriber.outOfOrder, 'updates the resumed subscriber received out of partition order');
  zero(subscriber.unknown, 'updates of no pushed message received by the subscriber');
  return failures;
}

/** The printed table. */
export function formatBridgeTable(result: BridgeSoakResult): string {
  const { subscriber, repliesLost } = result;
  const rows: [string, string | number][] = [
    ['messages / partitions', `${result.options.messages} / ${result.options.partitions}`],
    ['duration', `${(result.durationMs / 1000).toFixed(0)} s`],
    ['faults', result.faults.join(', ') || 'none'],
    ['pushed (answered 201)', result.pushed],
    [
      'broker stream entries (answered, absent / unanswered)',
      `${result.streamEntries} (${result.streamAbsent} / ${result.streamUnanswered})`,
    ],
    ['outbox left (pending / refused by the hub)', `${result.outboxPending} / ${result.outboxRefused}`],
    ['hub updates in history', result.hubUpdates],
    ['missing (no update)', result.missing],
    ['duplicated (ids / extra updates)', `${result.duplicatedIds} / ${result.duplicateUpdates}`],
    ['reordered within a partition', result.reordered],
    ['wrong topic or data', result.malformed],
    ['updates of no pushed message', result.unknownUpdates],
    ['publishes the hub answered from history (relayed again)', result.hubRepeats],
    [
      'subscriber: received / missed / twice / out of order',
      `${subscriber.received} / ${subscriber.missed} / ${subscriber.duplicates} / ${subscriber.outOfOrder}`,
    ],
    ['subscriber: moved to hub-2 with Last-Event-ID', subscriber.movedWith ?? 'never moved'],
    [
      'subscriber: reconnects / refused (re)connects',
      `${subscriber.reconnects} / ${subscriber.refusedConnections}`,
    ],
    [
      'replies lost (push / outbox-take / outbox-done)',
      `${repliesLost.push} / ${repliesLost['outbox-take']} / ${repliesLost['outbox-done']}`,
    ],
    [
      'client resends (connection errors / 503 / other 5xx)',
      `${result.connectionErrors} / ${result.unavailable} / ${result.serverErrors}`,
    ],
  ];
  const width = Math.max(...rows.map(([label]) => label.length));
  return rows.map(([label, value]) => `${label.padEnd(width)}  ${value}`).join('\n');
}

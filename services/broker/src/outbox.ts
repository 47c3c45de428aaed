/*
 * The outbox relay (docs/broker-outbox.md): every node runs one. It relays the intents the data
 * path's scripts recorded (a bridged queue's message events and a transaction's hub updates to
 * the hub; a committed transaction's shares in other Redis Cluster slots to those slots), in each
 * queue's order, and removes them once applied. Exactly once in effect: an intent is removed only
 * after its destination took it, and each destination applies an intent once (the hub keeps one
 * update per id; a share is applied once per transaction id), so an intent relayed again (its
 * relay died before removing it, a reply was lost, another relay took over a stalled one) takes
 * effect once. Its tick also decides transactions across slots whose node went away.
 *
 * Which queues: the node's own requests say at once (OutboxStore.onRecorded); the `due` list
 * names the rest (marked by other nodes, or retried); bridged queues are swept now and then for
 * intents a node killed before marking them left behind.
 */
import { Counter, Gauge, Histogram, type Registry } from '@herald/metrics';
import { type Clock, loggableError } from '@herald/redis';
import type { FastifyBaseLogger } from 'fastify';
import type { PayloadCipher } from './encryption.js';
import type { HubPublisher, PublishOutcome } from './hub-publisher.js';
import { namespaceAndTask, newId, streamIdTime } from './identifiers.js';
import { OUTBOX_MARK_GRACE_MS } from './redis/transactions.js';
import { type HubUpdate, type OutboxIntent, type OutboxStore, QUEUE_MODE } from './storage.js';

/** Intents one take reads. */
const TAKE_COUNT = 500;
/** How long a take holds a queue's outbox for its relay (renewed by each take). */
const LOCK_MS = 15_000;
/** Partitions (and the transaction updates, as one) of a batch published at once. */
const PARALLEL_PARTITIONS = 16;
/** Batches one pass relays before leaving the queue to the next (fairness between queues). */
const BATCHES_PER_PASS = 20;
/** Queues one node relays at once. */
const PARALLEL_QUEUES = 8;
const DEFAULT_INTERVAL_MS = 1000;
/** How often bridged queues are looked at for intents no mark names. */
const SWEEP_EVERY_MS = 15_000;
/** Retry delays after a failed publish: doubling from the first to the last. */
const RETRY_FIRST_MS = 500;
const RETRY_LAST_MS = 30_000;

/** What a template may name; each value is URI-encoded into it. */
const TEMPLATE_VARIABLE = /\{(queue|partition|namespace|task|group)\}/g;
export const TEMPLATE_VARIABLES = ['queue', 'partition', 'namespace', 'task', 'group'] as const;

/** `{x}` placeholders of a template that are not among TEMPLATE_VARIABLES. */
export function unknownTemplateVariables(template: string): string[] {
  const named = [...template.matchAll(/\{([^{}]*)\}/g)].map((match) => match[1] as string);
  return named.filter((name) => !(TEMPLATE_VARIABLES as readonly string[]).includes(name));
}

export function expandTemplate(
  template: string,
  values: Record<(typeof TEMPLATE_VARIABLES)[number], string>,
) {
  return template.replace(TEMPLATE_VARIABLE, (_, name: keyof typeof values) =>
    encodeURIComponent(values[name]),
  );
}

/**
 * The hub update of a bridged message's event. Its id is the message's and the event's (and the
 * group's, for a completion), so every relay of the intent publishes the same update.
 */
export function bridgeUpdate(intent: Extract<OutboxIntent, { kind: 'bridge' }>, payload: string): HubUpdate {
  const { namespace, task } = namespaceAndTask(intent.queue);
  // Queue mode (no consumer group) completes under a group name of its own: no group then.
  const group = intent.group === QUEUE_MODE ? '' : intent.group;
  const meta = {
    queue: intent.queue,
    partition: intent.partition,
    messageId: intent.messageId,
    transactionId: intent.transactionId,
    event: intent.event,
    ...(group ? { group } : {}),
  };
  return {
    id: `urn:herald:${intent.event}:${intent.messageId}${group ? `:${encodeURIComponent(group)}` : ''}`,
    topics: [
      expandTemplate(intent.topicTemplate, {
        queue: intent.queue,
        partition: intent.partition,
        namespace,
        task,
        group,
      }),
    ],
    // The payload is JSON text already: spliced in, not parsed and written again.
    data: `${JSON.stringify(meta).slice(0, -1)},"data":${payload}}`,
    private: intent.private,
    type: undefined,
  };
}

export interface OutboxRelayOptions {
  readonly outbox: OutboxStore;
  /** The hub the bridge and transaction updates go to; undefined: none (BROKER_HUB_URL unset). */
  readonly publisher: Pick<HubPublisher, 'publish'> | undefined;
  /** Opens the payloads of queues with encryptionEnabled. */
  readonly cipher: Pick<PayloadCipher, 'openText'>;
  readonly clock: Clock;
  readonly log: FastifyBaseLogger;
  readonly registry: Registry;
  /** How often the due list is read (ms). */
  readonly intervalMs?: number;
}

interface Pass {
  /** Another pass was asked for while this one ran. */
  again: boolean;
  readonly done: Promise<void>;
}

export class OutboxRelay {
  /** This node's relay: the holder named in each outbox lock it takes. */
  readonly id = `relay-${newId()}`;
  private readonly passes = new Map<string, Pass>();
  /** Retry delay per queue whose last pass failed to publish. */
  private readonly backoff = new Map<string, number>();
  /** When (ms) each queue's oldest waiting intent was recorded, as this node last saw it. */
  private readonly oldest = new Map<string, number>();
  private readonly toMark = new Set<string>();
  private markScheduled = false;
  private cancelTimer: (() => void) | undefined;
  private lastSweep = 0;
  private stopped = false;
  /** Queues whose last relaying failed (logged once until it goes through). */
  private readonly failing = new Set<string>();
  /** The last round could not reach the store (logged once until a round succeeds). */
  private storeFailing = false;
  private readonly relayed: Counter<'kind' | 'result'>;
  private readonly failures: Counter;
  private readonly delay: Histogram;

  constructor(private readonly options: OutboxRelayOptions) {
    const registers = [options.registry];
    this.relayed = new Counter({
      name: 'herald_outbox_relayed_total',
      help: 'Outbox intents relayed by this node, by kind (bridge, publish, apply) and result (delivered: its destination took it; refused: kept aside for good)',
      labelNames: ['kind', 'result'],
      registers,
    });
    this.failures = new Counter({
      name: 'herald_outbox_relay_failures_total',
      help: 'Intents whose delivery failed and will be tried again (hub unreachable, 5xx, 401, 429; a slot away)',
      registers,
    });
    this.delay = new Histogram({
      name: 'herald_outbox_relay_delay_seconds',
      help: 'Time from an intent being recorded to the hub taking it',
      buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60],
      registers,
    });
    const relay = this;
    new Gauge({
      name: 'herald_outbox_lag_seconds',
      help: 'Age of the oldest intent waiting in an outbox this node relays (0: none waiting)',
      registers,
      collect() {
        const now = relay.options.clock.now();
        let oldest = now;
        for (const at of relay.oldest.values()) oldest = Math.min(oldest, at);
        this.set(Math.max(0, now - oldest) / 1000);
      },
    });
  }

  start(): void {
    this.options.outbox.onRecorded((queue) => this.recorded(queue));
    this.schedule(0);
  }

  async stop(): Promise<void> {
    this.stopped = true;
    this.cancelTimer?.();
    await Promise.all([...this.passes.values()].map((pass) => pass.done));
  }

  /** A request of this node recorded intents: listed for every relay, relayed here at once. */
  recorded(queue: string): void {
    if (this.stopped) return;
    this.toMark.add(queue);
    if (!this.markScheduled) {
      this.markScheduled = true;
      // One mark per queue per turn, however many requests recorded intents in it.
      setImmediate(() => {
        this.markScheduled = false;
        const at = this.options.clock.now() + OUTBOX_MARK_GRACE_MS;
        for (const marked of this.toMark) {
          this.options.outbox.mark(marked, at).catch(() => undefined);
        }
        this.toMark.clear();
      });
    }
    this.relay(queue);
  }

  /** Runs a pass over the queue's outbox, or asks the running one for another. */
  private relay(queue: string, mark?: number): void {
    const running = this.passes.get(queue);
    if (running) {
      running.again = true;
      return;
    }
    const pass: Pass = { again: false, done: Promise.resolve() };
    this.passes.set(queue, pass);
    (pass as { done: Promise<void> }).done = (async () => {
      try {
        let next = mark;
        do {
          pass.again = false;
          await this.pass(queue, next);
          next = undefined;
        } while (pass.again && !this.stopped);
      } finally {
        this.passes.delete(queue);
      }
    })();
  }

  private schedule(inMs: number): void {
    if (this.stopped) return;
    const { clock } = this.options;
    this.cancelTimer = clock.timer(clock.now() + inMs, () => void this.tick());
  }

  private async tick(): Promise<void> {
    const { outbox, clock } = this.options;
    try {
      const now = clock.now();
      await outbox.recoverTransactions(now);
      if (now - this.lastSweep >= SWEEP_EVERY_MS) {
        this.lastSweep = now;
        await this.sweep();
      }
      const room = PARALLEL_QUEUES - this.passes.size;
      if (room > 0) {
        for (const { queue, mark } of await outbox.due(now, room)) {
          if (!this.passes.has(queue)) this.relay(queue, mark);
        }
      }
      this.storeFailing = false;
    } catch (error) {
      this.storeFailed(error);
    }
    this.schedule(this.options.intervalMs ?? DEFAULT_INTERVAL_MS);
  }

  /** Bridged queues with intents waiting: listed, whoever recorded them. */
  private async sweep(): Promise<void> {
    const { outbox, clock } = this.options;
    const bridged = await outbox.bridged();
    for (let start = 0; start < bridged.length; start += 100) {
      const statuses = await outbox.status(bridged.slice(start, start + 100));
      for (const { queue, pending } of statuses) {
        if (pending > 0 && !this.passes.has(queue)) await outbox.mark(queue, clock.now());
      }
    }
  }

  /**
   * Relays a queue's outbox until it is empty, another relay holds it, a publish fails (the
   * queue is marked for a retry) or BATCHES_PER_PASS batches went (marked for now).
   */
  private async pass(queue: string, mark: number | undefined): Promise<void> {
    const { outbox, clock } = this.options;
    try {
      for (let batch = 0; batch < BATCHES_PER_PASS && !this.stopped; batch++) {
        const taken = await outbox.take(queue, this.id, LOCK_MS, TAKE_COUNT);
        if (!taken.held) {
          // Another relay is at it; look again once its lock may have lapsed.
          await outbox.mark(queue, clock.now() + taken.retryInMs + 1);
          return;
        }
        const { intents } = taken;
        if (intents.length === 0) {
          this.oldest.delete(queue);
          this.backoff.delete(queue);
          if (mark !== undefined) await outbox.forget(queue, mark);
          return;
        }
        this.oldest.set(queue, streamIdTime((intents[0] as OutboxIntent).id));
        const { relayed, refused, failure } = await this.publishAll(intents);
        const left = await outbox.done(queue, this.id, relayed, refused);
        if (failure) {
          const wait = this.nextBackoff(queue, failure.retryInMs);
          // Once per queue until it goes through again: a hub away for an hour is two lines.
          if (!this.failing.has(queue)) {
            this.failing.add(queue);
            this.options.log.warn(
              { queue, reason: failure.reason, retryInMs: wait },
              'outbox: relaying failed; retrying with backoff',
            );
          }
          await outbox.mark(queue, clock.now() + wait);
          return;
        }
        this.backoff.delete(queue);
        if (this.failing.delete(queue)) this.options.log.info({ queue }, 'outbox: relaying resumed');
        if (left === 0) {
          this.oldest.delete(queue);
          if (mark !== undefined) await outbox.forget(queue, mark);
          return;
        }
      }
      // More than one pass's worth: the next tick (or another node) goes on.
      await outbox.mark(queue, clock.now());
    } catch (error) {
      // Redis unreachable or a reply lost: the intents stay; the due list (or the sweep) brings
      // the queue back.
      this.storeFailed(error);
      await outbox.mark(queue, clock.now() + this.nextBackoff(queue)).catch(() => undefined);
    }
  }

  /**
   * A round or pass that could not reach Redis: said once, at info, until a round succeeds (the
   * outage itself is logged by the storage's connections, one line lost and one back).
   */
  private storeFailed(error: unknown): void {
    if (this.storeFailing) return;
    this.storeFailing = true;
    this.options.log.info({ error: loggableError(error) }, 'outbox: a relay round failed; retrying');
  }

  private nextBackoff(queue: string, hinted?: number): number {
    const next = Math.min(RETRY_LAST_MS, (this.backoff.get(queue) ?? RETRY_FIRST_MS / 2) * 2);
    this.backoff.set(queue, next);
    return Math.max(next, hinted ?? 0);
  }

  /**
   * Publishes a batch: each partition's intents in order (a transaction's updates count as one
   * partition), partitions side by side. A partition stops at its first failure, so nothing
   * after it is published before it.
   */
  private async publishAll(intents: readonly OutboxIntent[]): Promise<{
    relayed: string[];
    refused: { id: string; reason: string }[];
    failure: { reason: string; retryInMs?: number } | undefined;
  }> {
    const lanes = new Map<string, OutboxIntent[]>();
    for (const intent of intents) {
      // Transactions' applies are independent of each other and of the hub: a lane of their own.
      const lane = intent.kind === 'bridge' ? `b${intent.partition}` : intent.kind === 'apply' ? 'a' : 'p';
      const list = lanes.get(lane);
      if (list) list.push(intent);
      else lanes.set(lane, [intent]);
    }
    const relayed: string[] = [];
    const refused: { id: string; reason: string }[] = [];
    let failure: { reason: string; retryInMs?: number } | undefined;
    const queue = [...lanes.values()];
    const worker = async () => {
      for (let lane = queue.shift(); lane; lane = queue.shift()) {
        for (const intent of lane) {
          const outcome = await this.publishOne(intent);
          if (outcome.result === 'retry') {
            failure ??= outcome.retryInMs === undefined ? { reason: outcome.reason } : outcome;
            this.failures.inc();
            break;
          }
          if (outcome.result === 'refused') {
            refused.push({ id: intent.id, reason: outcome.reason });
            this.options.log.error(
              { queue: intent.queue, reason: outcome.reason },
              'outbox: the hub refused an update for good; kept aside',
            );
          } else {
            relayed.push(intent.id);
            this.delay.observe(Math.max(0, this.options.clock.now() - streamIdTime(intent.id)) / 1000);
          }
          this.relayed.inc({
            kind: intent.kind,
            result: outcome.result === 'refused' ? 'refused' : 'delivered',
          });
        }
      }
    };
    await Promise.all(Array.from({ length: Math.min(PARALLEL_PARTITIONS, queue.length) }, worker));
    return { relayed, refused, failure };
  }

  private async publishOne(intent: OutboxIntent): Promise<PublishOutcome> {
    if (intent.kind === 'apply') {
      try {
        await this.options.outbox.applyTransaction(intent.transactionId, intent.shares);
        return { result: 'published' };
      } catch (error) {
        return {
          result: 'retry',
          reason: `applying transaction ${intent.transactionId}: ${(error as Error).message}`,
        };
      }
    }
    const { publisher } = this.options;
    // Recorded under another node's configuration: left for a node with a hub.
    if (!publisher) return { result: 'retry', reason: 'no hub configured on this node (BROKER_HUB_URL)' };
    if (intent.kind === 'publish') return publisher.publish(intent.update);
    let payload: string;
    try {
      payload = this.options.cipher.openText(intent.queue, intent.data);
    } catch (error) {
      // A key missing on this node: another node (or this one, once given it) may open it.
      return { result: 'retry', reason: (error as Error).message };
    }
    return publisher.publish(bridgeUpdate(intent, payload));
  }
}

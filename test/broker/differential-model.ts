/*
 * The operations of the broker's differential test, a seeded generator of sequences of them,
 * and how one sequence runs against one storage. An operation names what it acts on by small
 * numbers (queue 0..1, partition 0..2, "the k-th popped message"), resolved when it runs, so a
 * sequence with operations removed (shrinking) still replays.
 */
import type { BrokerStorage } from '@herald/broker';
import type { Clock } from '@herald/redis';
import { seededRandom } from '@herald/testkit';

type QueueOptions = Parameters<BrokerStorage['catalog']['configure']>[1];
type PushItem = Parameters<BrokerStorage['queues']['push']>[0][number];
type AckInput = Parameters<BrokerStorage['queues']['ack']>[0][number];
type AckStatus = AckInput['status'];
type PopResult = Awaited<ReturnType<BrokerStorage['queues']['pop']>>;
type TransactionOperation = Parameters<BrokerStorage['queues']['transaction']>[0][number];
type CycleInput = Parameters<BrokerStorage['streams']['cycle']>[0];
type CycleAckStatus = NonNullable<CycleInput['ack']>['status'];

/** 'Zeta' sorts before 'orders' by code unit, after it by locale. */
export const QUEUES = ['orders', 'Zeta.tasks'];
export const PARTITIONS = ['Default', 'p1', 'p2'];
/** Queen's name for queue mode (no consumer group). */
export const GROUPS = ['__QUEUE_MODE__', 'g1', 'g2'];
const TRANSACTIONS_PER_PARTITION = 6;
/** Fake time moved per sequence at most: the scripts' 60 s key expiries (answers of acks under a lease, requeue memos) run on Redis's own clock. */
export const MAX_ADVANCE_MS = 50_000;

export interface PushSpec {
  queue: number;
  partition: number;
  transaction: number;
}

export interface AckSpec {
  /** The k-th message popped so far (modulo their number). */
  popped: number;
  status: AckStatus;
  /** The lease of the pop, none, or one no pop gave. */
  lease: 'own' | 'none' | 'unknown';
  /** The popping group, or another one. */
  group: 'own' | number;
}

export type Operation =
  | { op: 'configure'; queue: number; options: Partial<QueueOptions>; named: boolean }
  | { op: 'push'; items: PushSpec[] }
  | {
      op: 'pop';
      queue: number;
      partition: number | null;
      group: number;
      batch: number;
      maxPartitions: number;
      subscription: 'all' | 'new' | { secondsAgo: number };
    }
  | { op: 'ack'; acks: AckSpec[] }
  | { op: 'transaction'; parts: ({ push: PushSpec } | { ack: AckSpec })[] }
  | { op: 'advance'; ms: number }
  | { op: 'extend'; pop: number; seconds: number }
  | { op: 'release'; pop: number }
  | {
      op: 'seek';
      queue: number;
      group: number;
      partition: number | null;
      target: 'end' | { secondsAgo: number };
    }
  | { op: 'deleteMessage'; pushed: number }
  | { op: 'deleteQueue'; queue: number }
  | { op: 'deleteGroup'; queue: number; group: number }
  | { op: 'requeue'; queue: number; picks: number[] }
  | { op: 'sweepLeases' }
  /** Streams (Queen's streams SDK state store): query `query` reads queue 0, writes to `sink`. */
  | { op: 'streamsRegister'; query: number; sink: number | null; hash: number; reset: boolean }
  | {
      op: 'streamsCycle';
      query: number;
      /** The shard and the acked batch: the k-th popped message (a pushed one without ack). */
      popped: number;
      ack: CycleAckStatus | null;
      releaseLease: boolean;
      state: { key: number; remove: boolean }[];
      pushes: PushSpec[];
    }
  | { op: 'streamsState'; query: number; popped: number }
  | { op: 'retention' }
  | { op: 'stats' };

/**
 * Every third seed follows the lease-expiry profile: short leases and few retries, retention of
 * completed messages on, so leases expire, expiries dead-letter and retention then looks at
 * them (options drawn at random alone reach that combination too rarely to catch a drift there).
 */
export function expiryProfile(seed: number): boolean {
  return seed % 3 === 0;
}

/** A generated sequence of `count` operations for `seed`. */
export function generate(seed: number, count: number): Operation[] {
  const expiries = expiryProfile(seed);
  const next = seededRandom(seed);
  const below = (n: number) => Math.floor(next() * n);
  const pick = <T>(list: readonly T[]): T => list[below(list.length)] as T;
  const chance = (p: number) => next() < p;
  let advanced = 0;

  const pushSpec = (): PushSpec => ({
    queue: chance(0.8) ? 0 : 1,
    partition: below(PARTITIONS.length),
    transaction: below(TRANSACTIONS_PER_PARTITION),
  });
  const ackSpec = (): AckSpec => ({
    popped: below(1000),
    status: pick<AckStatus>(['completed', 'completed', 'success', 'failed', 'failed', 'retry', 'dlq']),
    lease: chance(0.8) ? 'own' : pick(['none', 'unknown'] as const),
    group: chance(0.9) ? 'own' : below(GROUPS.length),
  });
  const options = (): Partial<QueueOptions> => {
    const all: Partial<QueueOptions> = {
      leaseTime: pick([1, 2, 5, 30]),
      retryLimit: pick([0, 1, 2, 3]),
      retryDelay: pick([0, 0, 500, 1500]),
      delayedProcessing: pick([0, 0, 1, 3]),
      windowBuffer: pick([0, 0, 0, 1, 2]),
      maxSize: pick([0, 0, 3, 6, 10]),
      ttl: pick([0, 0, 2, 10]),
      retentionSeconds: pick([0, 0, 2, 5]),
      completedRetentionSeconds: pick([0, 0, 1, 3]),
      retentionEnabled: chance(0.5),
      deadLetterQueue: chance(0.7),
      dlqAfterMaxRetries: chance(0.7),
      priority: below(4),
      encryptionEnabled: chance(0.03),
      maxWaitTimeSeconds: pick([0, 5]),
    };
    const some = Object.fromEntries(Object.entries(all).filter(() => chance(0.4)));
    if (!expiries) return some;
    return {
      ...some,
      leaseTime: pick([1, 1, 2]),
      retryLimit: pick([0, 0, 1]),
      retentionEnabled: true,
      completedRetentionSeconds: pick([1, 1, 3]),
    };
  };

  const operations: Operation[] = [];
  while (operations.length < count) {
    const roll = next();
    if (roll < 0.06) {
      operations.push({
        op: 'configure',
        queue: below(QUEUES.length),
        options: options(),
        named: chance(0.3),
      });
    } else if (roll < 0.24) {
      operations.push({ op: 'push', items: Array.from({ length: 1 + below(4) }, pushSpec) });
    } else if (roll < 0.44) {
      operations.push({
        op: 'pop',
        queue: chance(0.8) ? 0 : 1,
        partition: chance(0.6) ? null : below(PARTITIONS.length),
        group: below(GROUPS.length),
        batch: 1 + below(4),
        maxPartitions: 1 + below(3),
        subscription: chance(0.6) ? 'all' : chance(0.6) ? 'new' : { secondsAgo: below(20) },
      });
    } else if (roll < 0.6) {
      operations.push({ op: 'ack', acks: Array.from({ length: 1 + below(3) }, ackSpec) });
    } else if (roll < 0.64) {
      operations.push({
        op: 'transaction',
        parts: Array.from({ length: 1 + below(3) }, () =>
          chance(0.5) ? { push: pushSpec() } : { ack: ackSpec() },
        ),
      });
    } else if (roll < 0.74) {
      const ms = pick([300, 1000, 1000, 2000, 5000]);
      if (advanced + ms <= MAX_ADVANCE_MS) {
        advanced += ms;
        operations.push({ op: 'advance', ms });
      }
    } else if (roll < 0.77) {
      operations.push({ op: 'extend', pop: below(1000), seconds: 1 + below(10) });
    } else if (roll < 0.8) {
      operations.push({ op: 'release', pop: below(1000) });
    } else if (roll < 0.83) {
      operations.push({
        op: 'seek',
        queue: chance(0.8) ? 0 : 1,
        group: below(GROUPS.length),
        partition: chance(0.6) ? null : below(PARTITIONS.length),
        target: chance(0.4) ? 'end' : { secondsAgo: below(30) },
      });
    } else if (roll < 0.85) {
      operations.push({ op: 'deleteMessage', pushed: below(1000) });
    } else if (roll < 0.86) {
      operations.push({ op: 'deleteQueue', queue: chance(0.7) ? 1 : 0 });
    } else if (roll < 0.88) {
      operations.push({ op: 'deleteGroup', queue: chance(0.8) ? 0 : 1, group: below(GROUPS.length) });
    } else if (roll < 0.9) {
      operations.push({
        op: 'requeue',
        queue: chance(0.8) ? 0 : 1,
        picks: Array.from({ length: 1 + below(3) }, () => below(1000)),
      });
    } else if (roll < 0.93) {
      operations.push({ op: 'sweepLeases' });
    } else if (roll < 0.95) {
      operations.push({ op: 'retention' });
    } else if (roll < 0.96) {
      operations.push({ op: 'stats' });
    } else if (roll < 0.97) {
      operations.push({
        op: 'streamsRegister',
        query: below(2),
        sink: chance(0.5) ? null : below(QUEUES.length),
        hash: below(2),
        reset: chance(0.2),
      });
    } else if (roll < 0.995) {
      operations.push({
        op: 'streamsCycle',
        query: below(2),
        popped: below(1000),
        ack: chance(0.7)
          ? pick<CycleAckStatus>(['completed', 'completed', 'success', 'failed', 'dlq'])
          : null,
        releaseLease: chance(0.5),
        state: Array.from({ length: below(3) }, () => ({ key: below(3), remove: chance(0.2) })),
        pushes: Array.from({ length: below(3) }, pushSpec),
      });
    } else {
      operations.push({ op: 'streamsState', query: below(2), popped: below(1000) });
    }
  }
  return operations;
}

/** What one storage answered to one operation, and what it shows afterwards. */
export interface Step {
  result: unknown;
  after: unknown;
}

interface Popped {
  partitionId: string;
  transactionId: string;
  leaseId: string;
  group: string;
}

/**
 * Runs operations against one storage, keeping what later operations refer to. Each storage
 * of a pair gets its own runner: references resolve against that storage's own answers.
 */
export class Runner {
  private readonly popped: Popped[] = [];
  private readonly pops: { result: PopResult; group: string }[] = [];
  private readonly pushed: { partitionId: string; transactionId: string }[] = [];
  private leases = 0;
  private messages = 0;
  private requests = 0;
  private cycles = 0;
  /** Query ids registered, by query number. */
  private readonly queries = new Map<number, string>();

  constructor(
    readonly storage: BrokerStorage,
    private readonly clock: Clock,
    /** The names of queue 0 and 1 (QUEUES; one namespace when the run needs them in one slot). */
    private readonly queues: readonly string[] = QUEUES,
    /** Called with each query id a registration answers (a test clock tracks the query's keys). */
    private readonly onQuery: (queryId: string) => Promise<void> = async () => undefined,
  ) {}

  private item(spec: PushSpec): PushItem {
    const queue = this.queues[spec.queue] as string;
    const partition = PARTITIONS[spec.partition] as string;
    const transactionId = `t${spec.partition}.${spec.transaction}`;
    const number = this.messages++;
    return {
      queue,
      partition,
      transactionId,
      messageId: `m${number}`,
      traceId: number % 3 === 0 ? `trace${number}` : null,
      data: JSON.stringify({ n: number, transactionId }),
      producerSub: number % 4 === 0 ? 'producer' : null,
    };
  }

  private ack(spec: AckSpec): AckInput | undefined {
    if (this.popped.length === 0) return undefined;
    const popped = this.popped[spec.popped % this.popped.length] as Popped;
    return {
      transactionId: popped.transactionId,
      partitionId: popped.partitionId,
      status: spec.status,
      group: spec.group === 'own' ? popped.group : (GROUPS[spec.group] as string),
      leaseId: spec.lease === 'own' ? popped.leaseId : spec.lease === 'none' ? null : 'lease-nobody-holds',
      error: spec.status === 'completed' || spec.status === 'success' ? null : 'boom',
    };
  }

  private remember(pushedResults: { partitionId: string; transactionId: string; status: string }[]): void {
    for (const result of pushedResults) {
      if (result.status === 'queued') {
        this.pushed.push({ partitionId: result.partitionId, transactionId: result.transactionId });
      }
    }
  }

  /** The observable answer of one operation (a thrown error is an answer too). */
  async apply(operation: Operation): Promise<unknown> {
    try {
      return await this.applyOrThrow(operation);
    } catch (error) {
      const failure = error as Error & { code?: unknown; statusCode?: unknown };
      return { threw: failure.message, code: failure.code ?? null, statusCode: failure.statusCode ?? null };
    }
  }

  private async applyOrThrow(operation: Operation): Promise<unknown> {
    const storage = this.storage;
    const now = this.clock.now();
    switch (operation.op) {
      case 'configure': {
        const queue = this.queues[operation.queue] as string;
        const [namespace = '', task = ''] = operation.named ? ['ns', 'task'] : queue.split('.');
        return storage.catalog.configure(queue, operation.options, { namespace, task });
      }
      case 'push': {
        const results = await storage.queues.push(operation.items.map((spec) => this.item(spec)));
        this.remember(results);
        return results;
      }
      case 'pop': {
        const group = GROUPS[operation.group] as string;
        const result = await storage.queues.pop({
          queue: this.queues[operation.queue] as string,
          partition: operation.partition === null ? undefined : (PARTITIONS[operation.partition] as string),
          group,
          batch: operation.batch,
          maxPartitions: operation.maxPartitions,
          leaseId: `lease${this.leases++}`,
          subscription:
            operation.subscription === 'all' || operation.subscription === 'new'
              ? { mode: operation.subscription }
              : { mode: 'from', at: now - operation.subscription.secondsAgo * 1000 },
        });
        this.pops.push({ result, group });
        for (const partition of result.partitions) {
          for (const message of partition.messages) {
            this.popped.push({
              partitionId: partition.partitionId,
              transactionId: message.transactionId,
              leaseId: partition.leaseId,
              group,
            });
          }
        }
        return result;
      }
      case 'ack': {
        const acks = operation.acks.flatMap((spec) => this.ack(spec) ?? []);
        return acks.length === 0 ? 'nothing popped yet' : storage.queues.ack(acks);
      }
      case 'transaction': {
        const parts: TransactionOperation[] = operation.parts.flatMap((part): TransactionOperation[] => {
          if ('push' in part) return [{ type: 'push', item: this.item(part.push) }];
          const ack = this.ack(part.ack);
          return ack ? [{ type: 'ack', ack }] : [];
        });
        if (parts.length === 0) return 'nothing to do';
        const outcome = await storage.queues.transaction(parts);
        if (outcome.success) {
          for (const result of outcome.results) {
            if (result.type === 'push' && result.status === 'queued') {
              this.pushed.push({ partitionId: result.partitionId, transactionId: result.transactionId });
            }
          }
        }
        return outcome;
      }
      case 'advance':
        // Moved once for both storages, by the caller.
        return now;
      case 'extend': {
        const pop = this.pops[operation.pop % Math.max(1, this.pops.length)];
        const leaseId = pop?.result.partitions[0]?.leaseId ?? 'lease-nobody-holds';
        return storage.queues.extendLease(leaseId, operation.seconds);
      }
      case 'release': {
        const pop = this.pops[operation.pop % Math.max(1, this.pops.length)];
        if (!pop) return 'nothing popped yet';
        await storage.queues.release(pop.result, pop.group);
        return 'released';
      }
      case 'seek': {
        const partition =
          operation.partition === null ? undefined : (PARTITIONS[operation.partition] as string);
        return storage.groups.seek(
          this.queues[operation.queue] as string,
          GROUPS[operation.group] as string,
          partition,
          operation.target === 'end'
            ? { toEnd: true }
            : { timestamp: now - operation.target.secondsAgo * 1000 },
        );
      }
      case 'deleteMessage': {
        const message = this.pushed[operation.pushed % Math.max(1, this.pushed.length)];
        if (!message) return 'nothing pushed yet';
        return storage.messages.delete(message.partitionId, message.transactionId);
      }
      case 'deleteQueue':
        return storage.catalog.delete(this.queues[operation.queue] as string);
      case 'deleteGroup':
        return storage.groups.delete(
          this.queues[operation.queue] as string,
          GROUPS[operation.group] as string,
        );
      case 'requeue': {
        const queue = this.queues[operation.queue] as string;
        const { messages } = await storage.deadLetters.list({ queue, limit: 1000, offset: 0 });
        if (messages.length === 0) return 'no dead letters';
        const ids = operation.picks.map(
          (pick) => (messages[pick % messages.length] as { dlqId: string }).dlqId,
        );
        return storage.deadLetters.requeue(queue, ids);
      }
      case 'sweepLeases':
        return storage.housekeeping.sweepLeases();
      case 'streamsRegister': {
        const outcome = await storage.streams.register({
          name: `query${operation.query}`,
          sourceQueue: this.queues[0] as string,
          sinkQueue: operation.sink === null ? null : (this.queues[operation.sink] as string),
          configHash: `hash${operation.hash}`,
          reset: operation.reset,
          requestId: `00000000-0000-4000-8000-${String(this.requests++).padStart(12, '0')}`,
        });
        if (outcome.success) {
          this.queries.set(operation.query, outcome.queryId);
          await this.onQuery(outcome.queryId);
        }
        return outcome;
      }
      case 'streamsCycle': {
        const popped = this.popped[operation.popped % Math.max(1, this.popped.length)];
        const shard = popped?.partitionId ?? this.pushed[0]?.partitionId;
        if (!shard) return 'nothing pushed yet';
        const ack = popped && operation.ack;
        return storage.streams.cycle({
          cycleId: `cycle${this.cycles++}`,
          queryId: this.queries.get(operation.query) ?? 'no-such-query',
          partitionId: shard,
          group: popped?.group ?? (GROUPS[0] as string),
          releaseLease: operation.releaseLease,
          stateOps: operation.state.map(({ key, remove }) =>
            remove
              ? { type: 'delete', key: `k${key}` }
              : { type: 'upsert', key: `k${key}`, value: `{"v":${now}}` },
          ),
          pushItems: operation.pushes.map((spec) => this.item(spec)),
          ack: ack
            ? {
                transactionId: popped.transactionId,
                leaseId: popped.leaseId,
                status: ack,
                count: 1,
                error: ack === 'completed' || ack === 'success' ? null : 'boom',
              }
            : null,
        });
      }
      case 'streamsState': {
        const popped = this.popped[operation.popped % Math.max(1, this.popped.length)];
        const shard = popped?.partitionId ?? this.pushed[0]?.partitionId ?? 'no-shard';
        return storage.streams.state(this.queries.get(operation.query) ?? 'no-such-query', shard, []);
      }
      case 'retention':
        return storage.housekeeping.applyRetention();
      case 'stats':
        return storage.housekeeping.refreshStats();
    }
  }

  /** What the storage shows of its queues after an operation. */
  async observe(): Promise<unknown> {
    const storage = this.storage;
    const queues = await storage.catalog.list();
    const perQueue = await Promise.all(
      this.queues.map(async (queue) => ({
        queue,
        groups: await storage.groups.list(queue),
        messages: await storage.messages.list({ queue, limit: 1000 }),
        states: await storage.messages.states({ queue, limit: 1000, offset: 0 }),
        deadLetters: await storage.deadLetters.list({ queue, limit: 1000, offset: 0 }),
      })),
    );
    // Per query, in name order: Redis lists a hash in no fixed order once its values are long.
    const streams = (await storage.streams.stats()).sort((a, b) => (a.query < b.query ? -1 : 1));
    return { queues, perQueue, streams };
  }
}

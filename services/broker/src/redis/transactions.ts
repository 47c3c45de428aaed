/*
 * Transactions on Redis (QueueStore.transaction; docs/broker-outbox.md, "Transactions across
 * slots"). Within one slot (always, except on Redis Cluster) a transaction is one script,
 * lua/transaction-1.lua. Across Cluster slots it is a commit in one slot with the other slots'
 * shares prepared before and applied after, all-or-nothing as seen by any later request:
 *
 *   1. record   <prefix>{txn}:records / :pending name the transaction, its coordinator (the slot
 *               of its first queue) and its shares, until it is decided (a node killed from here
 *               on leaves it to recovery);
 *   2. prepare  each share checks and holds what it relies on (txn-prepare-1.lua); a refusal
 *               aborts every share (txn-abort-1.lua) and answers it;
 *   3. commit   the coordinator's share runs as transaction-1.lua, which writes the decision
 *               txd:<id> and an apply intent in the coordinator's outbox, atomically;
 *   4. apply    each share applies what it prepared (txn-apply-1.lua), at once by this node,
 *               again by the relay of the apply intent (outbox.ts), which removes the intent;
 *   5. forget   the record.
 *
 * Recovery (any node, from the relay's tick): a transaction still recorded past its deadline is
 * decided in its coordinator's slot (txn-decide-1.lua: 'committed' if the commit ran, else
 * 'aborted', written so a late commit refuses); committed ones are applied through their apply
 * intent, aborted ones have their shares released.
 */
import { performance } from 'node:perf_hooks';
import { BrokerError, ENCRYPTION_CHANGED, encryptionChanged } from '../errors.js';
import { namespaceAndTask, newId, partitionIdOf } from '../identifiers.js';
import type {
  AckInput,
  PushItem,
  TransactionOperation,
  TransactionOperationResult,
  TransactionOutcome,
} from '../storage.js';
import { encode, type RedisBackend, type Reply, slotTag } from './context.js';
import { FIVE_FIELDS, messageRecord } from './message-record.js';

/**
 * The queue whose outbox holds the hub updates of a transaction that touches no queue (never
 * listed as a queue: only its outbox keys exist).
 */
export const PUBLISH_ONLY_QUEUE = ':herald:publish';

/**
 * How long other nodes' relays leave a marked outbox to the node that marked it (its own relay
 * runs at once): past it, any relay takes it (docs/broker-outbox.md, "Relays").
 */
export const OUTBOX_MARK_GRACE_MS = 5000;

/** Leases named by a prepared share's acks live at least this long past the deadline. */
const LEASE_PIN_MS = 30_000;
/** Transactions one recovery round decides. */
const RECOVERY_BATCH = 50;
/**
 * How long an 'aborted' decision of recovery is kept (s): a node stalled past the deadline that
 * sends its commit later must still find it. Rare (crashes and stalls only), so it can be long.
 */
const ABORTED_DECISION_MEMORY_S = 3600;

/**
 * One item's ARGV entries, in the order read_push_item (lua/includes/read-push-item.lua) reads
 * them. `records` false (a node of an earlier release is connected: record-readers.ts): the
 * record goes prefixed with FIVE_FIELDS, and the script stores its five fields instead.
 */
export function pushItemArguments(item: PushItem, partitionId: string, records: boolean): string[] {
  const record = messageRecord(item);
  return [
    encode(item.partition),
    partitionId,
    item.transactionId,
    item.messageId,
    records ? record : FIVE_FIELDS + record,
  ];
}

/** One ack's ARGV entries, in the order ack_many (lua/includes/ack-many.lua) reads them. */
export function ackArguments(ack: AckInput, partition: string): string[] {
  return [
    encode(partition),
    encode(ack.group),
    ack.transactionId,
    ack.status,
    ack.leaseId ?? '',
    ack.error ?? '',
  ];
}

/**
 * ack-1.lua's arguments: runs of acks that share partition, group, status, lease and error
 * (a batch of one lease is one run), each `partition, group, status, leaseId, error, count`
 * then its `count` transactionIds, in the order given.
 */
export function ackRuns(acks: readonly { readonly ack: AckInput; readonly partition: string }[]): string[] {
  const args: string[] = [];
  let countAt = -1;
  let count = 0;
  let previous: { readonly ack: AckInput; readonly partition: string } | undefined;
  for (const entry of acks) {
    const { ack, partition } = entry;
    const sameRun =
      previous !== undefined &&
      partition === previous.partition &&
      ack.group === previous.ack.group &&
      ack.status === previous.ack.status &&
      ack.leaseId === previous.ack.leaseId &&
      ack.error === previous.ack.error;
    if (!sameRun) {
      if (countAt >= 0) args[countAt] = String(count);
      args.push(encode(partition), encode(ack.group), ack.status, ack.leaseId ?? '', ack.error ?? '', '');
      countAt = args.length - 1;
      count = 0;
    }
    args.push(ack.transactionId);
    count++;
    previous = entry;
  }
  if (countAt >= 0) args[countAt] = String(count);
  return args;
}

/** One operation, its queue resolved: what a share's script gets for it. */
export interface PlannedOperation {
  readonly index: number;
  /** undefined: a hub update, or an ack of a partition no queue has (key index 0). */
  readonly queue: string | undefined;
  readonly kind: 'push' | 'ack' | 'publish';
  /** Its ARGV entries after the key index (for 'publish': all of them). */
  readonly rest: string[];
}

/** The operations of one slot: the keys and arguments of its script, and where each came from. */
export class Share {
  readonly bases: string[] = [];
  readonly queues: string[] = [];
  readonly args: string[] = [];
  /** The transaction's index of each of this share's operations, in order. */
  readonly indexes: number[] = [];

  constructor(private readonly backend: RedisBackend) {}

  add(operation: PlannedOperation): void {
    this.indexes.push(operation.index);
    if (operation.kind === 'publish') {
      this.args.push('publish', ...operation.rest);
      return;
    }
    this.args.push(
      operation.kind,
      operation.queue === undefined ? '0' : String(this.keyOf(operation.queue)),
      ...operation.rest,
    );
  }

  keyOf(queue: string): number {
    const base = this.backend.base(queue);
    let index = this.bases.indexOf(base);
    if (index === -1) {
      index = this.bases.push(base) - 1;
      this.queues.push(queue);
    }
    return index + 1;
  }
}

/** What recovery needs of a transaction across slots: the queues of each share, by slot. */
export type TransactionRecord = { coordinator: string[]; shares: string[][] };

export class RedisTransactions {
  constructor(private readonly backend: RedisBackend) {}

  /**
   * Seconds a commit's decision and a share's applied or aborted record are kept: past twice the
   * deadline no resend and no recovery reads them any more. Bounded so that memory stays in
   * proportion to the rate (1,000 transactions per second keep ~2 minutes of them at 30 s).
   */
  get memorySeconds(): number {
    return Math.ceil((2 * this.backend.transactionDeadlineMs + 60_000) / 1000);
  }

  private get recordsKey(): string {
    return this.backend.key('{txn}', 'records');
  }

  private get pendingKey(): string {
    return this.backend.key('{txn}', 'pending');
  }

  async run(operations: TransactionOperation[]): Promise<TransactionOutcome> {
    const { backend } = this;
    const planned: PlannedOperation[] = [];
    const pushes: { queue: string; partitionId: string }[] = [];
    const touched = new Set<string>();
    for (const [index, operation] of operations.entries()) {
      if (operation.type === 'push') {
        const { item } = operation;
        const partitionId = partitionIdOf(item.queue, item.partition);
        await backend.registry.register(item.queue, [[item.partition, partitionId]]);
        const { namespace, task } = namespaceAndTask(item.queue);
        planned.push({
          index,
          queue: item.queue,
          kind: 'push',
          rest: [namespace, task, ...pushItemArguments(item, partitionId, backend.writesRecords)],
        });
        touched.add(item.queue);
        pushes[index] = { queue: item.queue, partitionId };
      } else if (operation.type === 'publish') {
        const { update } = operation;
        planned.push({
          index,
          queue: undefined,
          kind: 'publish',
          rest: [
            update.id,
            JSON.stringify(update.topics),
            update.private ? '1' : '0',
            update.type ?? '',
            update.data,
          ],
        });
      } else {
        const { ack } = operation;
        // An unknown partition is checked by the script too (key index 0: not found), in
        // operation order, so an earlier failing operation answers first, as in process
        // (differential test).
        const resolved = await backend.registry.resolve(ack.partitionId);
        planned.push({
          index,
          queue: resolved?.[0],
          kind: 'ack',
          rest: ackArguments(ack, resolved?.[1] ?? ''),
        });
        if (resolved) touched.add(resolved[0]);
      }
    }
    const first = planned.find((operation) => operation.queue !== undefined)?.queue;
    const publishes = planned.some((operation) => operation.kind === 'publish');
    // Only acks of partitions no queue has: the first one fails (nothing to run).
    if (first === undefined && !publishes)
      return { success: false, failedIndex: 0, error: 'Message not found' };
    // Hub updates and no queue: an outbox of their own.
    const coordinatorQueue = first ?? PUBLISH_ONLY_QUEUE;
    const coordinator = new Share(backend);
    coordinator.keyOf(coordinatorQueue);
    const shares = new Map<string, Share>();
    const coordinatorTag = slotTag(backend.base(coordinatorQueue));
    for (const operation of planned) {
      const tag = operation.queue === undefined ? coordinatorTag : slotTag(backend.base(operation.queue));
      // Off Cluster every key is reachable from one script: one share whatever the tags.
      if (!backend.oneSlot || tag === coordinatorTag) {
        coordinator.add(operation);
        continue;
      }
      let share = shares.get(tag);
      if (!share) {
        share = new Share(backend);
        shares.set(tag, share);
      }
      share.add(operation);
    }
    // Marked before the scripts: a node killed right after them leaves its intents listed.
    if (publishes || shares.size > 0)
      await backend.outbox.mark(coordinatorQueue, backend.clock.now() + OUTBOX_MARK_GRACE_MS);
    const outcome =
      shares.size === 0
        ? await this.commit(coordinator, '', [], operations)
        : await this.acrossSlots(coordinator, [...shares.values()], operations);
    if (!outcome.success) return outcome;
    const results = operations.map((operation, index): TransactionOperationResult => {
      const row = outcome.rows.get(index);
      if (operation.type === 'publish') return { type: 'publish', id: operation.update.id };
      if (operation.type === 'push') {
        const push = pushes[index] as { queue: string; partitionId: string };
        return {
          type: 'push',
          transactionId: operation.item.transactionId,
          // A share applied later (its slot away now) stores it under the node's id.
          status: row === undefined || row[1] === 1 ? 'queued' : 'duplicate',
          messageId: row === undefined ? operation.item.messageId : String(row[2]),
          partitionId: push.partitionId,
          traceId: operation.item.traceId,
          queue: push.queue,
        };
      }
      return {
        type: 'ack',
        transactionId: operation.ack.transactionId,
        dlq: row?.[2] === 1,
        repeat: row?.[3] === 1,
      };
    });
    backend.notifications.notify(touched);
    return outcome.windowMs === undefined
      ? { success: true, results }
      : { success: true, results, applyWindowMs: outcome.windowMs };
  }

  /**
   * Runs transaction-1.lua on the coordinator's share: the whole transaction within one slot, or
   * the commit of one across slots (`txid`, `shares` set).
   */
  private async commit(
    coordinator: Share,
    txid: string,
    shares: readonly Share[],
    operations: TransactionOperation[],
  ): Promise<
    | { success: true; rows: Map<number, Reply[]>; windowMs?: number }
    | Extract<TransactionOutcome, { success: false }>
  > {
    const { backend } = this;
    const reply = await backend.run<Reply[]>('transaction', coordinator.bases, [
      txid,
      shares.length === 0 ? '' : JSON.stringify(shares.map((share) => share.queues)),
      txid === '' ? '' : String(this.memorySeconds),
      ...coordinator.args,
    ]);
    const refusal = refusalOf(reply, coordinator, operations);
    if (refusal) return refusal;
    if (Number(reply[2]) > 0) backend.outbox.recorded(coordinator.queues[0] as string);
    const rows = new Map<number, Reply[]>();
    (reply[1] as Reply[][]).forEach((row, position) => {
      rows.set(coordinator.indexes[position] as number, row);
    });
    return { success: true, rows };
  }

  private async acrossSlots(
    coordinator: Share,
    shares: Share[],
    operations: TransactionOperation[],
  ): Promise<
    | { success: true; rows: Map<number, Reply[]>; windowMs?: number }
    | Extract<TransactionOutcome, { success: false }>
  > {
    const { txid, deadline } = await this.begin(coordinator.queues, shares);
    const prepared = await this.prepare(txid, deadline, shares);
    // The earliest refused operation answers, as within one slot.
    let refusal: Extract<TransactionOutcome, { success: false }> | undefined;
    let failure: unknown;
    prepared.forEach((settled, position) => {
      if (settled.status === 'rejected') {
        failure ??= settled.reason;
        return;
      }
      try {
        const refused = refusalOf(settled.value, shares[position] as Share, operations);
        if (refused && (!refusal || rank(refused.failedIndex) < rank(refusal.failedIndex))) refusal = refused;
      } catch (error) {
        // A push in clear to a queue encrypted meanwhile: the node seals and runs it again.
        failure ??= error;
      }
    });
    if (refusal || failure !== undefined) {
      await this.release(txid, shares);
      if (refusal) return refusal;
      throw failure;
    }
    let committed: Awaited<ReturnType<RedisTransactions['commit']>>;
    try {
      committed = await this.commit(coordinator, txid, shares, operations);
    } catch (error) {
      // A payload in clear for a queue encrypted meanwhile is refused by the check, before any
      // write. Anything else may have committed (a reply lost; a replica barrier timed out after
      // the script ran): recovery decides from the coordinator's slot (the record stays).
      if (error instanceof BrokerError && error.code === ENCRYPTION_CHANGED) await this.release(txid, shares);
      throw error;
    }
    if (!committed.success) {
      await this.release(txid, shares);
      return committed;
    }
    const committedAt = performance.now();
    const applied = await this.finish(txid, shares);
    applied.forEach((rows, position) => {
      const share = shares[position] as Share;
      rows?.forEach((row, index) => {
        committed.rows.set(share.indexes[index] as number, row);
      });
    });
    const windowMs = performance.now() - committedAt;
    return { ...committed, windowMs };
  }

  /**
   * Step 1 of a commit across slots (whatever the coordinator's script: transaction-1.lua, a
   * streams cycle): records the transaction until it is decided. The coordinator's script must
   * then write the decision `<coordinator base>txd:<txid>` and the apply intent of `shares`
   * atomically with its own changes, as transaction-1.lua does.
   */
  async begin(
    coordinatorQueues: readonly string[],
    shares: readonly Share[],
  ): Promise<{ txid: string; deadline: number }> {
    const { backend } = this;
    const txid = newId();
    const deadline = backend.clock.now() + backend.transactionDeadlineMs;
    const record: TransactionRecord = {
      coordinator: [...coordinatorQueues],
      shares: shares.map((share) => share.queues),
    };
    await backend.redis
      .multi()
      .hset(this.recordsKey, txid, JSON.stringify(record))
      .zadd(this.pendingKey, deadline, txid)
      .exec();
    return { txid, deadline };
  }

  /** Step 2: each share checks and holds what it relies on (txn-prepare-1.lua), side by side. */
  prepare(
    txid: string,
    deadline: number,
    shares: readonly Share[],
  ): Promise<PromiseSettledResult<Reply[]>[]> {
    const { backend } = this;
    return Promise.allSettled(
      shares.map((share) =>
        backend.run<Reply[]>('txn-prepare', share.bases, [txid, deadline + LEASE_PIN_MS, ...share.args]),
      ),
    );
  }

  /**
   * Nothing committed: every share is released (a share whose prepare failed in transit may
   * have run). The record goes only once every release is known to have run; else recovery
   * decides the transaction (aborted: its commit never ran) and releases them again.
   */
  async release(txid: string, shares: readonly Share[]): Promise<void> {
    if (await this.abort(txid, shares)) await this.forget(txid);
  }

  /**
   * Step 4 and 5, once the coordinator committed: the shares applied now, so the next request
   * sees every share (one whose slot is away now is applied by the relay of the apply intent),
   * and the record forgotten. Resolves to each share's results (undefined: not applied now).
   */
  async finish(
    txid: string,
    shares: readonly (Share | readonly string[])[],
  ): Promise<(Reply[][] | undefined)[]> {
    const applied = await Promise.allSettled(
      shares.map((share) => this.applyShare(txid, share instanceof Share ? share.queues : share)),
    );
    await this.forget(txid).catch(() => undefined);
    return applied.map((settled) => (settled.status === 'fulfilled' ? settled.value : undefined));
  }

  /** Applies one prepared share (txn-apply-1.lua); its results, or undefined when there was none. */
  async applyShare(txid: string, queues: readonly string[]): Promise<Reply[][] | undefined> {
    const { backend } = this;
    const reply = await backend.run<Reply[]>(
      'txn-apply',
      queues.map((queue) => backend.base(queue)),
      [txid, this.memorySeconds],
    );
    if (reply[0] !== 'OK') return undefined;
    if (Number(reply[2]) > 0) for (const queue of queues) backend.outbox.recorded(queue);
    backend.notifications.notify(queues);
    return reply[1] as Reply[][];
  }

  /** Releases the shares; resolves to whether every release is known to have run. */
  private async abort(txid: string, shares: readonly (Share | readonly string[])[]): Promise<boolean> {
    const { backend } = this;
    const settled = await Promise.allSettled(
      shares.map((share) => {
        const queues = share instanceof Share ? share.queues : share;
        return backend.run(
          'txn-abort',
          queues.map((queue) => backend.base(queue)),
          [txid, this.memorySeconds],
        );
      }),
    );
    return settled.every((result) => result.status === 'fulfilled');
  }

  private async forget(txid: string): Promise<void> {
    await this.backend.redis.multi().zrem(this.pendingKey, txid).hdel(this.recordsKey, txid).exec();
  }

  /**
   * Decides the transactions still recorded past their deadline (their node went away between
   * record and forget); resolves to how many.
   */
  async recover(now: number): Promise<number> {
    const { backend } = this;
    const due = await backend.redis.zrangebyscore(this.pendingKey, '-inf', now, 'LIMIT', 0, RECOVERY_BATCH);
    for (const txid of due) {
      const text = await backend.redis.hget(this.recordsKey, txid);
      if (text) {
        const record = JSON.parse(text) as TransactionRecord;
        const coordinatorQueue = record.coordinator[0] as string;
        const decision = await backend.run<string>(
          'txn-decide',
          [backend.base(coordinatorQueue)],
          [txid, Math.max(ABORTED_DECISION_MEMORY_S, this.memorySeconds)],
        );
        // Committed: its apply intent is in the coordinator's outbox, listed for the relays now.
        if (decision === 'committed') await backend.outbox.mark(coordinatorQueue, now);
        // A share out of reach keeps the record: the next round releases it again.
        else if (!(await this.abort(txid, record.shares))) continue;
      }
      await this.forget(txid);
    }
    return due.length;
  }
}

/** failedIndex -1 (a full queue, a timed-out commit) ranks after any operation's own. */
function rank(failedIndex: number): number {
  return failedIndex < 0 ? Number.POSITIVE_INFINITY : failedIndex;
}

/** A script's refusal as the transaction's answer (its index mapped back), or undefined. */
function refusalOf(
  reply: Reply[],
  share: Share,
  operations: TransactionOperation[],
): Extract<TransactionOutcome, { success: false }> | undefined {
  if (reply[0] === 'CLEAR') {
    const refused = operations[share.indexes[Number(reply[1])] as number];
    throw encryptionChanged(refused?.type === 'push' ? refused.item.queue : '');
  }
  if (reply[0] !== 'FAIL') return undefined;
  const local = Number(reply[1]);
  return {
    success: false,
    failedIndex: local < 0 ? -1 : (share.indexes[local] as number),
    error: String(reply[2]),
  };
}

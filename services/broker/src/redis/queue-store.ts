/*
 * The data path on Redis (the QueueStore role): push, pop, release, ack, transaction and lease
 * extension. Each is one script per queue it touches (lua/push-1.lua, pop-1.lua, release-1.lua,
 * ack-1.lua, transaction-1.lua, extend-lease-1.lua; their headers list KEYS and ARGV and say
 * why a resend is safe), with the global registrations a later request looks names up by: the
 * partition-id index (registry.ts: acks name a partition by id) and the lease index
 * (`lease:<leaseId>` → queue: an extension names only the lease). Where a lease expires: the
 * scripts expire the ones they meet; housekeeping.ts sweeps the rest.
 */
import { encryptionChanged, queueFull } from '../errors.js';
import { namespaceAndTask, partitionIdOf, positionBefore, streamIdTime } from '../identifiers.js';
import type {
  AckInput,
  AckResult,
  LeaseExtension,
  PopRequest,
  PopResult,
  PushItem,
  PushResult,
  QueueStore,
  StoredMessage,
  TransactionOperation,
  TransactionOutcome,
} from '../storage.js';
import { forEachBounded, QUEUES_IN_FLIGHT } from './bounded.js';
import { decode, encode, type RedisBackend, type Reply } from './context.js';
import { readRecord } from './message-record.js';
import { ackRuns, pushItemArguments, RedisTransactions } from './transactions.js';

/** How long the lease index outlives its lease (an extension arriving late still finds it). */
const LEASE_INDEX_GRACE_MS = 60_000;

/**
 * How many pops per group a push can serve, per queue: one per partition it wrote a new
 * message to (a pop leases whole partitions, one consumer per partition and group).
 */
function pushCapacity(items: readonly PushItem[], results: readonly PushResult[]): Map<string, number> {
  const partitions = new Map<string, Set<string>>();
  items.forEach((item, index) => {
    if (results[index]?.status !== 'queued') return;
    let set = partitions.get(item.queue);
    if (!set) {
      set = new Set();
      partitions.set(item.queue, set);
    }
    set.add(item.partition);
  });
  return new Map([...partitions].map(([queue, set]) => [queue, set.size]));
}

export class RedisQueueStore implements QueueStore {
  private readonly transactions: RedisTransactions;

  constructor(private readonly backend: RedisBackend) {
    this.transactions = new RedisTransactions(backend);
  }

  async push(items: PushItem[]): Promise<PushResult[]> {
    const { backend } = this;
    const byQueue = new Map<string, { index: number; item: PushItem; partitionId: string }[]>();
    items.forEach((item, index) => {
      const list = byQueue.get(item.queue) ?? [];
      list.push({ index, item, partitionId: partitionIdOf(item.queue, item.partition) });
      byQueue.set(item.queue, list);
    });
    const results: PushResult[] = new Array(items.length);
    // By queue in input order, so the first refusal is the same whatever script answers first.
    const failures: (Error | undefined)[] = [];
    await forEachBounded([...byQueue], QUEUES_IN_FLIGHT, async ([queue, list], order) => {
      await backend.registry.register(
        queue,
        list.map(({ item, partitionId }) => [item.partition, partitionId] as [string, string]),
      );
      const base = backend.base(queue);
      const { namespace, task } = namespaceAndTask(queue);
      const args: (string | number)[] = [namespace, task];
      const records = backend.writesRecords;
      for (const { item, partitionId } of list) {
        args.push(...pushItemArguments(item, partitionId, records));
      }
      const reply = await backend.run<Reply[]>('push', [base], args);
      if (reply[0] === 'CLEAR') {
        failures[order] = encryptionChanged(queue);
        return;
      }
      if (reply[0] === 'FULL') {
        failures[order] = queueFull(queue, Number(reply[1]), Number(reply[2]));
        return;
      }
      if (Number(reply[2]) > 0) backend.outbox.recorded(queue);
      const rows = reply[1] as [number, string][];
      list.forEach(({ index, item, partitionId }, position) => {
        const [queued, messageId] = rows[position] as [number, string];
        results[index] = {
          transactionId: item.transactionId,
          status: queued === 1 ? 'queued' : 'duplicate',
          messageId,
          partitionId,
          traceId: item.traceId,
          queue,
        };
      });
    });
    // The queues that stored their items wake their waiters even when another one refused.
    backend.notifications.notify(pushCapacity(items, results));
    const failure = failures.find((error) => error !== undefined);
    if (failure) throw failure;
    return results;
  }

  async pop(request: PopRequest): Promise<PopResult> {
    const { backend } = this;
    const base = backend.base(request.queue);
    const start =
      request.subscription.mode === 'all'
        ? '0-0'
        : positionBefore(request.subscription.mode === 'new' ? backend.clock.now() : request.subscription.at);
    // Lease extension names only the lease: this index finds its queue (and expires). Where all
    // keys live on one server the pop script writes it; on Redis Cluster it is in another slot.
    const indexKey = backend.key('lease', request.leaseId);
    const indexedByScript = !backend.oneSlot;
    const reply = await backend.run<[string, [string, string, string, string, Reply[]][]]>(
      'pop',
      indexedByScript ? [base, indexKey] : [base],
      [
        encode(request.group),
        request.partition === undefined ? '' : encode(request.partition),
        request.batch,
        request.maxPartitions,
        request.leaseId,
        start,
        request.queue,
        LEASE_INDEX_GRACE_MS,
      ],
    );
    const partitions = reply[1].map(([partition, partitionId, leaseId, expiresAt, flat]) => {
      // 3 entries per message (pop-1.lua): streamId, record, retryCount.
      const messages: StoredMessage[] = [];
      for (let k = 0; k < flat.length; k += 3) {
        const { id, transactionId, traceId, data, producerSub } = readRecord(flat[k + 1] as string);
        messages.push({
          id,
          transactionId,
          traceId: traceId === '' ? null : traceId,
          data,
          producerSub: producerSub === '' ? null : producerSub,
          createdAt: streamIdTime(flat[k] as string),
          retryCount: Number(flat[k + 2]),
        });
      }
      return {
        queue: request.queue,
        partition: decode(partition),
        partitionId,
        leaseId,
        leaseExpiresAt: Number(expiresAt),
        messages,
      };
    });
    const first = partitions[0];
    if (first && !indexedByScript) {
      await backend.redis.set(
        indexKey,
        request.queue,
        'PX',
        Math.max(1000, first.leaseExpiresAt - backend.clock.now() + LEASE_INDEX_GRACE_MS),
      );
    }
    return { partitions, nextReadyAt: Number(reply[0]) };
  }

  largestRecord(queue: string): number {
    return this.backend.recordSizes.largest([this.backend.base(queue)]);
  }

  /** Gives a pop's leases back without counting an attempt (its client went away). */
  async release(result: PopResult, group: string): Promise<void> {
    const { backend } = this;
    const byQueue = new Map<string, { leaseId: string; partitions: string[] }>();
    const freed: (readonly [string, number])[] = [];
    for (const popped of result.partitions) {
      const entry = byQueue.get(popped.queue) ?? { leaseId: popped.leaseId, partitions: [] };
      entry.partitions.push(encode(popped.partition), encode(group));
      byQueue.set(popped.queue, entry);
      freed.push([popped.queue, 1]);
    }
    await Promise.all(
      [...byQueue].map(([queue, { leaseId, partitions }]) => {
        const base = backend.base(queue);
        return backend.run('release', [base], [leaseId, ...partitions]);
      }),
    );
    backend.notifications.notify(freed);
  }

  async ack(acks: AckInput[]): Promise<AckResult[]> {
    const { backend } = this;
    const results: AckResult[] = new Array(acks.length);
    const byQueue = new Map<string, { index: number; ack: AckInput; partition: string }[]>();
    await Promise.all(
      acks.map(async (ack, index) => {
        // Known partitions resolve without a promise per ack (a batch names few partitions).
        const resolved =
          backend.registry.known(ack.partitionId) ?? (await backend.registry.resolve(ack.partitionId));
        if (!resolved) {
          results[index] = {
            transactionId: ack.transactionId,
            success: false,
            error: 'Message not found',
            queue: null,
            partition: null,
            leaseReleased: false,
            dlq: false,
            repeat: false,
          };
          return;
        }
        const [queue, partition] = resolved;
        const list = byQueue.get(queue) ?? [];
        list.push({ index, ack, partition });
        byQueue.set(queue, list);
      }),
    );
    const wake: (readonly [string, number])[] = [];
    await Promise.all(
      [...byQueue].map(async ([queue, list]) => {
        list.sort((a, b) => a.index - b.index);
        const base = backend.base(queue);
        // Per ack: its refusal, or 1 + 2 leaseReleased + 4 dlq + 8 repeat (ack-1.lua). Answer
        // records under a lease only once every connected node reads them (record-readers.ts).
        const [rows, intents] = await backend.run<[(number | string)[], number]>(
          'ack',
          [base],
          [backend.writesRecords ? '1' : '0', ...ackRuns(list)],
        );
        if (intents > 0) backend.outbox.recorded(queue);
        // A partition id the registry knows but no message was ever stored under (a refused push
        // registers first) names no queue in the answer, as in process (differential test).
        const unknown = new Set<string>();
        const notFound = list.filter((_, position) => rows[position] === 'Message not found');
        if (notFound.length > 0) {
          const names = [...new Set(notFound.map(({ partition }) => partition))];
          const ids = await backend.redis.hmget(`${base}parts`, ...names.map(encode));
          names.forEach((name, position) => {
            if (ids[position] === null) unknown.add(name);
          });
        }
        list.forEach(({ index, ack, partition }, position) => {
          const row = rows[position] as number | string;
          const code = typeof row === 'number' ? row : 0;
          const released = (code & 2) !== 0;
          const repeat = (code & 8) !== 0;
          if (released || (code !== 0 && !repeat && ack.status !== 'completed' && ack.status !== 'success')) {
            wake.push([queue, 1]);
          }
          results[index] = {
            transactionId: ack.transactionId,
            success: code !== 0,
            error: typeof row === 'string' ? row : null,
            queue: unknown.has(partition) ? null : queue,
            partition: unknown.has(partition) ? null : partition,
            leaseReleased: released,
            dlq: (code & 4) !== 0,
            repeat,
          };
        });
      }),
    );
    backend.notifications.notify(wake);
    return results;
  }

  /** Pushes, acks and hub updates, all applied or none (transactions.ts). */
  transaction(operations: TransactionOperation[]): Promise<TransactionOutcome> {
    return this.transactions.run(operations);
  }

  async extendLease(leaseId: string, seconds: number): Promise<LeaseExtension> {
    const { backend } = this;
    const queue = await backend.redis.get(backend.key('lease', leaseId));
    if (!queue) return { leaseId, success: false, error: 'Lease not found', expiresAt: null };
    const base = backend.base(queue);
    const [ok, value] = await backend.run<[number, string]>('extend-lease', [base], [leaseId, seconds]);
    if (ok !== 1) return { leaseId, success: false, error: value, expiresAt: null };
    const expiresAt = Number(value);
    await backend.redis.pexpireat(backend.key('lease', leaseId), expiresAt + LEASE_INDEX_GRACE_MS);
    return { leaseId, success: true, error: null, expiresAt };
  }
}

// Over 600 lines on purpose, for now: the Redis side of the storage interface, one method per
// script call; issue #11 splits the broker's storage along the Lua scripts' lines (traces
// already live in traces-redis.ts).
import type { Histogram } from '@herald/metrics';
import {
  createRedis,
  instrumentRedis,
  OutageLog,
  type OutageLogger,
  parseRedisOptions,
  probeRedis,
  type Redis,
  redisTarget,
  runScript,
  type ScriptSet,
} from '@herald/redis';
import { closeRedis } from './close.js';
import { encryptionChanged, queueFull } from './errors.js';
import { namespaceAndTask, newId, partitionIdOf, positionBefore, streamIdTime } from './identifiers.js';
import { RedisRegistry } from './registry-redis.js';
import {
  RETENTION_BATCH,
  RETENTION_RUN_BUDGET_MS,
  retentionRounds,
  scheduleAllPartitions,
} from './retention.js';
import { loadBrokerScripts } from './scripts.js';
import {
  type AckInput,
  type AckResult,
  type AvailabilityListener,
  type BrokerStorage,
  DEFAULT_QUEUE_OPTIONS,
  type DeadLetter,
  type LeaseExtension,
  type LeaseSweep,
  type MessageView,
  type PartitionState,
  type PopRequest,
  type PopResult,
  type PushItem,
  type PushResult,
  pushCapacity,
  type QueueInfo,
  type QueueMessageState,
  type QueueOptions,
  type QueueStats,
  type SeekTarget,
  type SystemFlags,
  snapshotRates,
  type TraceEntry,
  type TraceInput,
  type TransactionOperation,
  type TransactionOutcome,
} from './storage.js';
import { listQueueMessagesRedis } from './storage-redis-messages.js';
import { RedisStreams } from './streams/redis.js';
import { RedisTraces } from './traces-redis.js';
import { LIMITS } from './validation.js';

export interface RedisStorageOptions {
  readonly url: string;
  /** Prefix of every key (`herald:broker:`); each queue's keys add a hash tag after it. */
  readonly prefix: string;
  readonly commandDuration?: Histogram<'command'>;
  /** Where the node's Redis outages are logged (one line lost, one back: `OutageLog`). */
  readonly log: OutageLogger;
}

/**
 * A request's Redis command is refused after this long without a reply (at once while the
 * connection is down), so the route answers 503 instead of hanging (docs/broker.md, "Outages").
 */
export const COMMAND_TIMEOUT_MS = 1000;

const encode = encodeURIComponent;
const decode = decodeURIComponent;
const STATS_SAMPLE = 50;
/** Active leases a stats run reads per queue to count `processing` (messages under lease). */
const STATS_LEASES_READ = 10_000;
/** Dead letters moved per requeue script run. */
const REQUEUE_CHUNK = 1000;

type Reply = string | number | null | Reply[];

function parseOptions(hash: Record<string, string>): QueueOptions {
  const options = { ...DEFAULT_QUEUE_OPTIONS } as Record<string, number | boolean>;
  for (const [name, fallback] of Object.entries(DEFAULT_QUEUE_OPTIONS)) {
    const raw = hash[name];
    if (raw === undefined) continue;
    options[name] = typeof fallback === 'boolean' ? raw === 'true' : Number(raw);
  }
  return options as unknown as QueueOptions;
}

function fieldsOf(entry: [string, string[]]): Record<string, string> {
  const fields: Record<string, string> = {};
  const list = entry[1];
  for (let index = 0; index + 1 < list.length; index += 2) {
    fields[list[index] as string] = list[index + 1] as string;
  }
  return fields;
}

function parseJson(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return text;
  }
}

/**
 * A notification on the `notify` channel: `<capacity> <queue>`, or `* <queue>` when every
 * parked pop of the queue should try (capacity unknown). See AvailabilityListener.
 */
function formatNotification(queue: string, capacity: number): string {
  return `${Number.isFinite(capacity) ? capacity : '*'} ${queue}`;
}

function parseNotification(message: string): [string, number] {
  const space = message.indexOf(' ');
  const count = message.slice(0, space);
  if (space > 0 && (count === '*' || /^\d+$/.test(count))) {
    return [message.slice(space + 1), count === '*' ? Number.POSITIVE_INFINITY : Number(count)];
  }
  // Not in this format (an older node): a bare queue name, wake every waiter.
  return [message, Number.POSITIVE_INFINITY];
}

/**
 * The Redis Streams backend. Every state change is one Lua script on one queue's hash slot
 * (lua/*.lua); the few global keys (queue set, partition-id index, lease index, flags, stats,
 * traces) are written by plain commands outside scripts so scripts stay single-slot.
 */
export class RedisStorage implements BrokerStorage {
  readonly kind = 'redis';
  private readonly redis: Redis;
  private readonly subscriber: Redis;
  private readonly scripts: ScriptSet;
  private readonly prefix: string;
  private readonly listeners = new Set<AvailabilityListener>();
  /** Notifications not yet published (coalesced per event-loop turn), queue → capacity. */
  private readonly pendingNotifications = new Map<string, number>();
  private notifyScheduled = false;
  private readonly registry: RedisRegistry;
  private flagCache: SystemFlags | undefined;
  private readonly traces: RedisTraces;
  readonly streams: RedisStreams;

  constructor(private readonly options: RedisStorageOptions) {
    this.prefix = options.prefix;
    this.redis = createRedis(
      parseRedisOptions(options.url, { connectionName: 'herald-broker', commandTimeout: COMMAND_TIMEOUT_MS }),
    );
    if (options.commandDuration) instrumentRedis(this.redis, options.commandDuration);
    this.subscriber = createRedis(
      parseRedisOptions(options.url, { connectionName: 'herald-broker-notify', forSubscriber: true }),
    );
    // Outages surface through /readyz, 503s and two log lines; an unhandled 'error' event would crash.
    const outages = new OutageLog(options.log, redisTarget(options.url));
    outages.watch(this.redis, 'herald-broker');
    outages.watch(this.subscriber, 'herald-broker-notify');
    this.scripts = loadBrokerScripts();
    this.traces = new RedisTraces(this.redis, (...parts) => this.key(...parts));
    this.registry = new RedisRegistry(this.redis, (...parts) => this.key(...parts));
    // Control messages sent while this node was away are lost: read the flags afresh.
    this.subscriber.on('ready', () => {
      this.flagCache = undefined;
    });
    this.streams = new RedisStreams({
      redis: this.redis,
      streamsBase: this.key('streams:'),
      run: (name, args) => this.run(name, [], args),
      base: (queue) => this.base(queue),
      resolvePartition: (partitionId) => this.registry.resolve(partitionId),
      register: (queue, partitions) => this.registry.register(queue, partitions),
      notify: (queues) => this.notify(queues),
    });
    this.subscriber.on('message', (channel: string, message: string) => {
      if (channel === this.key('control')) {
        if (!this.registry.onControl(message)) this.flagCache = undefined;
        return;
      }
      const [queue, capacity] = parseNotification(message);
      for (const listener of this.listeners) listener(queue, capacity);
    });
    // Re-subscribed by ioredis after a reconnect (autoResubscribe).
    void this.subscriber.subscribe(this.key('notify'), this.key('control')).catch(() => undefined);
  }

  /** The URL given at construction (for BullMQ connections of the maintenance module). */
  get url(): string {
    return this.options.url;
  }

  private key(...parts: string[]): string {
    return this.prefix + parts.join(':');
  }

  /** `<prefix>{<queue>}:`: every key of one queue shares this hash tag. */
  private base(queue: string): string {
    return `${this.prefix}{${encode(queue)}}:`;
  }

  private run<T = Reply>(name: string, keys: string[], args: (string | number)[]): Promise<T> {
    const script = this.scripts.get(name);
    if (!script) throw new Error(`missing Lua script ${name}`);
    return runScript<T>(this.redis, script, keys, args);
  }

  /**
   * Publishes "work may be available" for each queue, with the number of pops per group it
   * can serve (a bare name: unknown, wake every waiter). Coalesced per event-loop turn: under
   * load many requests finish in one turn, and one PUBLISH per queue then covers them all.
   */
  private notify(queues: Iterable<string | readonly [string, number]>): void {
    for (const entry of queues) {
      const [queue, capacity] = typeof entry === 'string' ? [entry, Number.POSITIVE_INFINITY] : entry;
      this.pendingNotifications.set(queue, (this.pendingNotifications.get(queue) ?? 0) + capacity);
    }
    if (this.notifyScheduled || this.pendingNotifications.size === 0) return;
    this.notifyScheduled = true;
    setImmediate(() => {
      this.notifyScheduled = false;
      const channel = this.key('notify');
      for (const [queue, capacity] of this.pendingNotifications) {
        void this.redis.publish(channel, formatNotification(queue, capacity)).catch(() => undefined);
      }
      this.pendingNotifications.clear();
    });
  }

  onAvailable(listener: AvailabilityListener): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  async ready(): Promise<string | undefined> {
    const probe = await probeRedis(this.redis);
    return probe.ok ? undefined : probe.error;
  }

  async close(): Promise<void> {
    // Bounded even with Redis down (close.ts): QUIT only on a live connection.
    this.registry.stop();
    await Promise.all([closeRedis(this.redis), closeRedis(this.subscriber)]);
  }

  async configure(
    queue: string,
    options: Partial<QueueOptions>,
    names: { namespace: string; task: string },
  ): Promise<QueueInfo> {
    const base = this.base(queue);
    const fields: string[] = ['namespace', names.namespace, 'task', names.task];
    for (const [name, value] of Object.entries(options)) fields.push(name, String(value));
    await this.redis
      .multi()
      .hsetnx(`${base}cfg`, 'createdAt', String(Date.now()))
      .hset(`${base}cfg`, ...fields)
      .exec();
    await scheduleAllPartitions(this.redis, base);
    await this.registry.register(queue, []);
    return (await this.getQueue(queue)) as QueueInfo;
  }

  async push(items: PushItem[]): Promise<PushResult[]> {
    const byQueue = new Map<string, { index: number; item: PushItem; partitionId: string }[]>();
    items.forEach((item, index) => {
      const list = byQueue.get(item.queue) ?? [];
      list.push({ index, item, partitionId: partitionIdOf(item.queue, item.partition) });
      byQueue.set(item.queue, list);
    });
    const results: PushResult[] = new Array(items.length);
    const failures: Error[] = [];
    await Promise.all(
      [...byQueue].map(async ([queue, list]) => {
        await this.registry.register(
          queue,
          list.map(({ item, partitionId }) => [item.partition, partitionId] as [string, string]),
        );
        const base = this.base(queue);
        const { namespace, task } = namespaceAndTask(queue);
        const args: (string | number)[] = [base, namespace, task];
        for (const { item, partitionId } of list) {
          args.push(...pushItemArguments(item, partitionId));
        }
        const reply = await this.run<Reply[]>('push', [`${base}cfg`], args);
        if (reply[0] === 'CLEAR') {
          failures.push(encryptionChanged(queue));
          return;
        }
        if (reply[0] === 'FULL') {
          failures.push(queueFull(queue, Number(reply[1]), Number(reply[2])));
          return;
        }
        const rows = reply[1] as [number, string][];
        list.forEach(({ index, item, partitionId }, position) => {
          const [queued, messageId] = rows[position] as [number, string];
          results[index] = {
            index,
            transaction_id: item.transactionId,
            status: queued === 1 ? 'queued' : 'duplicate',
            message_id: messageId,
            partition_id: partitionId,
            trace_id: item.traceId,
            queueName: queue,
          };
        });
      }),
    );
    const [failure] = failures;
    if (failure) throw failure;
    this.notify(pushCapacity(items, results));
    return results;
  }

  async pop(request: PopRequest): Promise<PopResult> {
    const base = this.base(request.queue);
    const start =
      request.subscription.mode === 'all'
        ? '0-0'
        : positionBefore(request.subscription.mode === 'new' ? Date.now() : request.subscription.at);
    const reply = await this.run<[string, [string, string, string, string, Reply[][]][]]>(
      'pop',
      [`${base}cfg`],
      [
        base,
        encode(request.group),
        request.partition === undefined ? '' : encode(request.partition),
        request.batch,
        request.maxPartitions,
        request.leaseId,
        start,
      ],
    );
    const partitions = reply[1].map(([partition, partitionId, leaseId, expiresAt, messages]) => ({
      queue: request.queue,
      partition: decode(partition),
      partitionId,
      leaseId,
      leaseExpiresAt: Number(expiresAt),
      messages: messages.map((row) => {
        const [streamId, id, transactionId, traceId, data, producerSub, retryCount] = row as [
          string,
          string,
          string,
          string,
          string,
          string,
          number,
        ];
        return {
          id,
          transactionId,
          traceId: traceId === '' ? null : traceId,
          data,
          producerSub: producerSub === '' ? null : producerSub,
          createdAt: streamIdTime(streamId),
          retryCount: Number(retryCount),
        };
      }),
    }));
    const first = partitions[0];
    if (first) {
      // Lease extension names only the lease: this index finds its queue (and expires).
      await this.redis.set(
        this.key('lease', first.leaseId),
        request.queue,
        'PX',
        Math.max(1000, first.leaseExpiresAt - Date.now() + 60_000),
      );
    }
    return { partitions, nextReadyAt: Number(reply[0]) };
  }

  async release(result: PopResult, group: string): Promise<void> {
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
        const base = this.base(queue);
        return this.run('release', [`${base}cfg`], [base, leaseId, ...partitions]);
      }),
    );
    this.notify(freed);
  }

  async ack(acks: AckInput[]): Promise<AckResult[]> {
    const results: AckResult[] = new Array(acks.length);
    const byQueue = new Map<string, { index: number; ack: AckInput; partition: string }[]>();
    await Promise.all(
      acks.map(async (ack, index) => {
        // Known partitions resolve without a promise per ack (a batch names few partitions).
        const resolved =
          this.registry.known(ack.partitionId) ?? (await this.registry.resolve(ack.partitionId));
        if (!resolved) {
          results[index] = {
            index,
            transactionId: ack.transactionId,
            success: false,
            error: 'Message not found',
            queueName: null,
            partitionName: null,
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
        const base = this.base(queue);
        const args: string[] = [base];
        for (const { ack, partition } of list) {
          args.push(
            encode(partition),
            encode(ack.group),
            ack.transactionId,
            ack.status,
            ack.leaseId ?? '',
            ack.error ?? '',
          );
        }
        const rows = await this.run<[number, string, number, number, number][]>('ack', [`${base}cfg`], args);
        list.forEach(({ index, ack, partition }, position) => {
          const [ok, error, released, dlq, repeat] = rows[position] as [
            number,
            string,
            number,
            number,
            number,
          ];
          if (
            released === 1 ||
            (ok === 1 && repeat !== 1 && ack.status !== 'completed' && ack.status !== 'success')
          ) {
            wake.push([queue, 1]);
          }
          results[index] = {
            index,
            transactionId: ack.transactionId,
            success: ok === 1,
            error: ok === 1 ? null : error,
            queueName: queue,
            partitionName: partition,
            leaseReleased: released === 1,
            dlq: dlq === 1,
            repeat: repeat === 1,
          };
        });
      }),
    );
    this.notify(wake);
    return results;
  }

  async transaction(operations: TransactionOperation[]): Promise<TransactionOutcome> {
    const args: string[] = [];
    const touched = new Set<string>();
    const pushes: { queue: string; partitionId: string }[] = [];
    for (const [index, operation] of operations.entries()) {
      if (operation.type === 'push') {
        const { item } = operation;
        const partitionId = partitionIdOf(item.queue, item.partition);
        await this.registry.register(item.queue, [[item.partition, partitionId]]);
        const { namespace, task } = namespaceAndTask(item.queue);
        args.push('push', this.base(item.queue), namespace, task, ...pushItemArguments(item, partitionId));
        touched.add(item.queue);
        pushes[index] = { queue: item.queue, partitionId };
      } else {
        const { ack } = operation;
        const resolved = await this.registry.resolve(ack.partitionId);
        if (!resolved) return { success: false, error: 'Message not found', failedIndex: index };
        const [queue, partition] = resolved;
        args.push(
          'ack',
          this.base(queue),
          encode(partition),
          encode(ack.group),
          ack.transactionId,
          ack.status,
          ack.leaseId ?? '',
          ack.error ?? '',
        );
        touched.add(queue);
      }
    }
    const reply = await this.run<Reply[]>('transaction', [], args);
    if (reply[0] === 'CLEAR') {
      const refused = operations[Number(reply[1])];
      throw encryptionChanged(refused?.type === 'push' ? refused.item.queue : '');
    }
    if (reply[0] === 'FAIL') {
      return { success: false, failedIndex: Number(reply[1]), error: String(reply[2]) };
    }
    const rows = reply[1] as Reply[][];
    const results = operations.map((operation, index) => {
      const row = rows[index] as Reply[];
      if (operation.type === 'push') {
        const push = pushes[index] as { queue: string; partitionId: string };
        return {
          index,
          type: 'push' as const,
          success: true as const,
          transactionId: operation.item.transactionId,
          messageId: String(row[2]),
          partitionId: push.partitionId,
          queueName: push.queue,
          status: row[1] === 1 ? ('queued' as const) : ('duplicate' as const),
        };
      }
      return {
        index,
        type: 'ack' as const,
        success: true as const,
        transactionId: operation.ack.transactionId,
        error: null,
        dlq: row[2] === 1,
        repeat: row[3] === 1,
      };
    });
    this.notify(touched);
    return { success: true, results };
  }

  async extendLease(leaseId: string, seconds: number): Promise<LeaseExtension> {
    const queue = await this.redis.get(this.key('lease', leaseId));
    if (!queue) return { leaseId, success: false, error: 'Lease not found', expiresAt: null };
    const base = this.base(queue);
    const [ok, value] = await this.run<[number, string]>(
      'extendLease',
      [`${base}cfg`],
      [base, leaseId, seconds],
    );
    if (ok !== 1) return { leaseId, success: false, error: value, expiresAt: null };
    const expiresAt = Number(value);
    await this.redis.pexpireat(this.key('lease', leaseId), expiresAt + 60_000);
    return { leaseId, success: true, error: null, expiresAt: new Date(expiresAt).toISOString() };
  }

  private async queueNames(): Promise<string[]> {
    return (await this.redis.smembers(this.key('queues'))).sort();
  }

  async listQueues(): Promise<QueueInfo[]> {
    const queues = await Promise.all((await this.queueNames()).map((queue) => this.getQueue(queue)));
    return queues.filter((queue): queue is QueueInfo => queue !== undefined);
  }

  async getQueue(queue: string): Promise<QueueInfo | undefined> {
    const base = this.base(queue);
    const [config, partitions] = await Promise.all([
      this.redis.hgetall(`${base}cfg`),
      this.redis.hlen(`${base}parts`),
    ]);
    if (!config.createdAt) return undefined;
    const names = namespaceAndTask(queue);
    return {
      name: queue,
      namespace: config.namespace || names.namespace,
      task: config.task || names.task,
      createdAt: new Date(Number(config.createdAt)).toISOString(),
      options: parseOptions(config),
      partitions,
    };
  }

  async deleteQueue(queue: string): Promise<boolean> {
    const base = this.base(queue);
    const exists = await this.redis.exists(`${base}cfg`);
    // Read first as well: a resent script (its first reply lost) returns no ids, and the first
    // run's would stay in the global index.
    const known = await this.redis.hvals(`${base}parts`);
    const ids = [
      ...new Set([...known, ...(await this.run<string[]>('deleteQueue', [`${base}cfg`], [base]))]),
    ];
    await this.registry.remove(queue, ids);
    await this.redis.hdel(this.key('stats'), queue);
    return exists === 1;
  }

  private view(
    queue: string,
    partition: string,
    partitionId: string,
    entry: [string, string[]],
  ): MessageView {
    const fields = fieldsOf(entry);
    return {
      id: fields.m ?? '',
      transactionId: fields.t ?? '',
      traceId: fields.tr || null,
      queue,
      partition,
      partitionId,
      data: parseJson(fields.d ?? 'null'),
      producerSub: fields.s || null,
      createdAt: new Date(streamIdTime(entry[0])).toISOString(),
    };
  }

  async listMessages(filter: { queue: string; partition?: string; limit: number }): Promise<MessageView[]> {
    const base = this.base(filter.queue);
    const parts = await this.redis.hgetall(`${base}parts`);
    const names = filter.partition === undefined ? Object.keys(parts) : [encode(filter.partition)];
    const out: MessageView[] = [];
    for (const name of names.sort()) {
      if (out.length >= filter.limit) break;
      const partitionId = parts[name];
      if (!partitionId) continue;
      const entries = (await this.redis.xrange(
        `${base}s:${name}`,
        '-',
        '+',
        'COUNT',
        filter.limit - out.length,
      )) as [string, string[]][];
      for (const entry of entries) out.push(this.view(filter.queue, decode(name), partitionId, entry));
    }
    return out;
  }

  listQueueMessages(filter: { queue: string; limit: number; offset: number }): Promise<QueueMessageState[]> {
    return listQueueMessagesRedis(this.redis, this.base(filter.queue), filter.queue, filter);
  }

  async getMessage(partitionId: string, transactionId: string): Promise<MessageView | undefined> {
    const resolved = await this.registry.resolve(partitionId);
    if (!resolved) return undefined;
    const [queue, partition] = resolved;
    const base = this.base(queue);
    const dedup = await this.redis.hget(`${base}d:${encode(partition)}`, transactionId);
    if (!dedup) return undefined;
    const streamId = dedup.slice(0, dedup.indexOf(' '));
    const entries = (await this.redis.xrange(`${base}s:${encode(partition)}`, streamId, streamId)) as [
      string,
      string[],
    ][];
    const [entry] = entries;
    return entry ? this.view(queue, partition, partitionId, entry) : undefined;
  }

  async deleteMessage(partitionId: string, transactionId: string): Promise<boolean> {
    const resolved = await this.registry.resolve(partitionId);
    if (!resolved) return false;
    const [queue, partition] = resolved;
    const base = this.base(queue);
    // Read first as well: a resent script (its first reply lost) finds nothing and answers 0.
    const existed = await this.redis.hexists(`${base}d:${encode(partition)}`, transactionId);
    const deleted = await this.run<number>(
      'deleteMessage',
      [`${base}cfg`],
      [base, encode(partition), transactionId],
    );
    return deleted === 1 || existed === 1;
  }

  async listDeadLetters(filter: {
    queue: string;
    group?: string;
    limit: number;
    offset: number;
  }): Promise<{ messages: DeadLetter[]; total: number }> {
    const base = this.base(filter.queue);
    const parts = await this.redis.hgetall(`${base}parts`);
    const toLetter = (entry: [string, string[]]): DeadLetter => {
      const fields = fieldsOf(entry);
      const partition = decode(fields.p ?? '');
      return {
        dlqId: entry[0],
        id: fields.m ?? '',
        transactionId: fields.t ?? '',
        traceId: fields.tr || null,
        queue: filter.queue,
        partition,
        partitionId: parts[fields.p ?? ''] ?? '',
        data: parseJson(fields.d ?? 'null'),
        producerSub: fields.s || null,
        createdAt: new Date(streamIdTime(fields.sid ?? '0-0')).toISOString(),
        consumerGroup: decode(fields.g ?? ''),
        errorMessage: fields.err ?? '',
        retryCount: Number(fields.rc ?? 0),
        failedAt: new Date(Number(fields.at ?? 0)).toISOString(),
      };
    };
    if (filter.group === undefined) {
      const total = await this.redis.xlen(`${base}dlq`);
      const entries = (await this.redis.xrange(
        `${base}dlq`,
        '-',
        '+',
        'COUNT',
        filter.offset + filter.limit,
      )) as [string, string[]][];
      return { messages: entries.slice(filter.offset).map(toLetter), total };
    }
    const all = ((await this.redis.xrange(`${base}dlq`, '-', '+')) as [string, string[]][])
      .map(toLetter)
      .filter((letter) => letter.consumerGroup === filter.group);
    return { messages: all.slice(filter.offset, filter.offset + filter.limit), total: all.length };
  }

  async requeueDeadLetters(queue: string, dlqIds: string[]): Promise<number> {
    const base = this.base(queue);
    let count = 0;
    // In chunks: each script run blocks Redis, so none moves more than REQUEUE_CHUNK letters.
    for (let start = 0; start < dlqIds.length; start += REQUEUE_CHUNK) {
      const args: string[] = [base];
      for (const id of dlqIds.slice(start, start + REQUEUE_CHUNK)) args.push(id, newId());
      count += await this.run<number>('requeueDlq', [`${base}cfg`], args);
    }
    if (count > 0) this.notify([queue]);
    return count;
  }

  async partitionStates(queue: string): Promise<PartitionState[]> {
    const base = this.base(queue);
    const rows = await this.run<
      [string, string, number, string, string, number, [string, number, string, number, number][]][]
    >(
      'partitions',
      [`${base}cfg`],
      [
        base,
        LIMITS.maxDetailedPartitions,
        LIMITS.partitionLagCount,
        LIMITS.partitionDeadLettersRead,
        LIMITS.detailedViewCountBudget,
      ],
    );
    return rows.map(([partition, partitionId, retained, oldestAt, newestAt, deadLetters, groups]) => ({
      partition: decode(partition),
      partitionId,
      retained: Number(retained),
      oldestAt: Number(oldestAt),
      newestAt: Number(newestAt),
      deadLetters: Number(deadLetters),
      groups: groups.map(([group, lag, oldestPendingAt, leaseActive, leased]) => ({
        group: decode(group),
        lag: Number(lag),
        oldestPendingAt: Number(oldestPendingAt),
        leaseActive: Number(leaseActive) === 1,
        leased: Number(leased),
      })),
    }));
  }

  async groupsOf(queue: string): Promise<string[]> {
    return (await this.redis.hkeys(`${this.base(queue)}groups`)).map(decode).sort();
  }

  async seek(
    queue: string,
    group: string,
    partition: string | undefined,
    target: SeekTarget,
  ): Promise<number> {
    const base = this.base(queue);
    const position = 'toEnd' in target ? 'end' : positionBefore(target.timestamp);
    const moved = await this.run<number>(
      'seek',
      [`${base}cfg`],
      [base, encode(group), partition === undefined ? '' : encode(partition), position],
    );
    this.notify([queue]);
    return moved;
  }

  async deleteGroup(queue: string, group: string): Promise<boolean> {
    const base = this.base(queue);
    // Read first as well: a resent script (its first reply lost) finds no group and answers 0.
    const existed = await this.redis.hexists(`${base}groups`, encode(group));
    return (
      (await this.run<number>('deleteGroup', [`${base}cfg`], [base, encode(group)])) === 1 || existed === 1
    );
  }

  addTrace(trace: TraceInput): Promise<TraceEntry> {
    return this.traces.add(trace);
  }

  tracesOf(partitionId: string, transactionId: string): Promise<TraceEntry[]> {
    return this.traces.ofMessage(partitionId, transactionId);
  }

  tracesByName(name: string, limit: number): Promise<TraceEntry[]> {
    return this.traces.byName(name, limit);
  }

  traceNames(limit: number): Promise<{ name: string; count: number }[]> {
    return this.traces.names(limit);
  }

  async flags(): Promise<SystemFlags> {
    if (this.flagCache) return this.flagCache;
    const hash = await this.redis.hgetall(this.key('flags'));
    const flags = {
      maintenanceMode: hash.maintenanceMode === 'true',
      popMaintenanceMode: hash.popMaintenanceMode === 'true',
    };
    this.flagCache = flags;
    return flags;
  }

  async setFlags(flags: Partial<SystemFlags>): Promise<SystemFlags> {
    const fields: string[] = [];
    for (const [name, value] of Object.entries(flags)) fields.push(name, String(value));
    if (fields.length > 0) await this.redis.hset(this.key('flags'), ...fields);
    this.flagCache = undefined;
    await this.redis.publish(this.key('control'), 'flags');
    return this.flags();
  }

  async sweepLeases(): Promise<LeaseSweep> {
    const expired: { queue: string; count: number }[] = [];
    for (const queue of await this.queueNames()) {
      const base = this.base(queue);
      const [count] = await this.run<[number, string[]]>('sweepLeases', [`${base}cfg`], [base, 1000]);
      if (count > 0) expired.push({ queue, count });
    }
    this.notify(expired.map(({ queue }) => queue));
    return { expired };
  }

  async applyRetention(budgetMs = RETENTION_RUN_BUDGET_MS): Promise<number> {
    const { partitions, perPartition, perCall } = RETENTION_BATCH;
    return retentionRounds(await this.queueNames(), budgetMs, async (queue) => {
      const base = this.base(queue);
      const args = [base, partitions, perPartition, perCall];
      const [deleted, more] = await this.run<[number, number]>('retention', [`${base}cfg`], args);
      return { deleted: Number(deleted), more: Number(more) === 1 };
    });
  }

  async refreshStats(): Promise<QueueStats[]> {
    const snapshot: QueueStats[] = [];
    const previous = new Map((await this.cachedStats()).map((stats) => [stats.queue, stats]));
    for (const queue of await this.queueNames()) {
      const base = this.base(queue);
      const [pushed, retained, dlq, expiries, partitions, oldest, leases, groups, now, batch, answered] =
        await this.run<
          [
            number,
            number,
            number,
            number,
            number,
            string,
            number,
            [string, number, number, number, string, string][],
            string,
            number,
            number,
          ]
        >('stats', [`${base}cfg`], [base, STATS_SAMPLE, STATS_LEASES_READ]);
      const names = namespaceAndTask(queue);
      const groupStats = groups.map(([group, resolved, backlog, withLag, groupOldest, start]) => ({
        group: decode(group),
        resolved: Number(resolved),
        lag: Math.max(0, Number(backlog)),
        partitionsWithLag: Number(withLag),
        oldestPendingAt: Number(groupOldest),
        // A start position is '<ms-1>-<max>' (storage-redis pop), '0-0' for all history.
        subscribedAt: start === '0-0' ? 0 : streamIdTime(start) + 1,
      }));
      const pending = groupStats.length === 0 ? Number(retained) : Math.max(...groupStats.map((g) => g.lag));
      const oldestMs = Number(oldest);
      snapshot.push({
        queue,
        namespace: names.namespace,
        task: names.task,
        partitions: Number(partitions),
        pushed: Number(pushed),
        retained: Number(retained),
        pending,
        oldestPendingAgeSeconds:
          oldestMs === 0 || pending === 0 ? 0 : Math.max(0, (Number(now) - oldestMs) / 1000),
        leasedMessages: Number(batch),
        leasedAnswered: Number(answered),
        deadLetters: Number(dlq),
        leaseExpiries: Number(expiries),
        activeLeases: Number(leases),
        ...snapshotRates(previous.get(queue), Number(pushed), groupStats, Number(now)),
        groups: groupStats,
        at: Number(now),
      });
    }
    const statsKey = this.key('stats');
    const pipeline = this.redis.multi().del(statsKey);
    for (const entry of snapshot) pipeline.hset(statsKey, entry.queue, JSON.stringify(entry));
    await pipeline.exec();
    return snapshot;
  }

  async cachedStats(): Promise<QueueStats[]> {
    const hash = await this.redis.hgetall(this.key('stats'));
    return Object.values(hash).map((text) => JSON.parse(text) as QueueStats);
  }
}

/** One item's ARGV entries, in the order the push logic of lua/includes/broker.lua reads them. */
function pushItemArguments(item: PushItem, partitionId: string): string[] {
  return [
    encode(item.partition),
    partitionId,
    item.transactionId,
    item.messageId,
    item.traceId ?? '',
    item.data,
    item.producerSub ?? '',
  ];
}

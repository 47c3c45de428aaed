import type { RedisClient } from '@herald/redis';
import { encryptionChanged } from '../errors.js';
import { namespaceAndTask, partitionIdOf } from '../identifiers.js';
import { pushItemArguments } from '../redis/push.js';
import type { PushResult } from '../storage.js';
import { STREAMS_LIMITS } from './limits.js';
import type {
  CycleInput,
  CycleOutcome,
  QueryRegistration,
  QueryStateStats,
  RegisterOutcome,
  StateRow,
  StreamsStorage,
} from './types.js';

/** What the streams side needs from RedisStorage (its connection, scripts and indexes). */
export interface RedisStreamsHost {
  readonly redis: RedisClient;
  /** `<prefix>streams:` */
  readonly streamsBase: string;
  run(name: string, args: (string | number)[]): Promise<unknown>;
  /** `<prefix>{<queue>}:` */
  base(queue: string): string;
  /** Queue and partition of a partition id, undefined when unknown. */
  resolvePartition(partitionId: string): Promise<[string, string] | undefined>;
  /** Global registrations of queues and partitions a push creates. */
  register(queue: string, partitions: [string, string][]): Promise<void>;
  /** Wakes parked pops: [queue, capacity] pairs. */
  notify(queues: Iterable<readonly [string, number]>): void;
}

interface LuaCycleAnswer {
  unknown?: true;
  /** A sink queue has encryptionEnabled and a push to it was not sealed: nothing applied. */
  clear?: string;
  ok?: boolean;
  error?: string;
  applied?: number;
  /** cjson writes an empty list as {}. */
  pushes?: LuaPush[] | Record<string, never>;
  ack?: { count: number; released: number; dlq: number } | false;
}

interface LuaPush {
  queue: string;
  partitionId: string;
  transactionId: string;
  queued: number;
  messageId: string;
}

/**
 * Streams on Redis: registration and cycles are one Lua script each
 * (lua/streams-register-0.lua, lua/streams-cycle-0.lua, where the key layout is listed);
 * state reads are plain hash reads.
 */
export class RedisStreams implements StreamsStorage {
  constructor(private readonly host: RedisStreamsHost) {}

  private queryBase(queryId: string): string {
    return `${this.host.streamsBase}{${queryId}}:`;
  }

  async register(registration: QueryRegistration): Promise<RegisterOutcome> {
    const reply = await this.host.run('streams-register', [
      this.host.streamsBase,
      registration.name,
      registration.sourceQueue,
      registration.sinkQueue ?? '',
      registration.configHash,
      registration.reset ? '1' : '0',
      registration.requestId,
      STREAMS_LIMITS.maxQueries,
    ]);
    const answer = JSON.parse(String(reply)) as {
      success: boolean;
      query_id?: string;
      fresh?: boolean;
      reset?: boolean;
      conflict?: 'hash' | 'full';
      error?: string;
    };
    if (answer.success) {
      return {
        success: true,
        queryId: answer.query_id as string,
        fresh: answer.fresh === true,
        reset: answer.reset === true,
      };
    }
    return {
      success: false,
      conflict: answer.conflict ?? 'hash',
      queryId: answer.query_id ?? null,
      error: answer.error ?? 'registration refused',
    };
  }

  async cycle(input: CycleInput): Promise<CycleOutcome | undefined> {
    const args: (string | number)[] = [
      this.host.streamsBase,
      input.cycleId,
      input.queryId,
      input.partitionId,
      STREAMS_LIMITS.cycleMemorySeconds,
      STREAMS_LIMITS.maxStateRowsPerShard,
      STREAMS_LIMITS.maxStateBytesPerShard,
      input.stateOps.length,
    ];
    for (const op of input.stateOps) {
      args.push(op.type === 'upsert' ? 'u' : 'd', op.key, op.type === 'upsert' ? op.value : '');
    }
    args.push(input.pushItems.length);
    const sinkQueues = new Map<string, number>();
    for (const item of input.pushItems) {
      const partitionId = partitionIdOf(item.queue, item.partition);
      await this.host.register(item.queue, [[item.partition, partitionId]]);
      const { namespace, task } = namespaceAndTask(item.queue);
      args.push(
        this.host.base(item.queue),
        namespace,
        task,
        item.queue,
        ...pushItemArguments(item, partitionId),
      );
    }
    let sourceQueue: string | null = null;
    if (input.ack) {
      const source = await this.host.resolvePartition(input.partitionId);
      // Checked before the script: an unknown partition is the ack's 'Message not found'.
      if (!source)
        return (await this.queryExists(input.queryId))
          ? { success: false, error: 'Message not found' }
          : undefined;
      sourceQueue = source[0];
      const { ack } = input;
      args.push(
        '1',
        this.host.base(source[0]),
        encodeURIComponent(source[1]),
        encodeURIComponent(input.group),
        ack.transactionId,
        ack.leaseId ?? '',
        ack.status,
        ack.count,
        ack.error ?? '',
        input.releaseLease ? '1' : '0',
      );
    } else {
      args.push('0');
    }
    const answer = JSON.parse(String(await this.host.run('streams-cycle', args))) as LuaCycleAnswer;
    if (answer.unknown) return undefined;
    // PayloadEncryption.store reads the option again, seals and sends the cycle once more.
    if (answer.clear !== undefined) throw encryptionChanged(answer.clear);
    if (!answer.ok) return { success: false, error: answer.error ?? 'cycle refused' };
    const pushes = Array.isArray(answer.pushes) ? answer.pushes : [];
    const pushResults: PushResult[] = pushes.map((push, index) => {
      if (push.queued === 1) sinkQueues.set(push.queue, 1);
      return {
        index,
        transaction_id: push.transactionId,
        status: push.queued === 1 ? 'queued' : 'duplicate',
        message_id: push.messageId,
        partition_id: push.partitionId,
        trace_id: input.pushItems[index]?.traceId ?? null,
        queueName: push.queue,
      };
    });
    const ackResult = answer.ack
      ? {
          success: true as const,
          count: answer.ack.count,
          lease_released: answer.ack.released === 1,
          dlq: answer.ack.dlq === 1,
        }
      : null;
    if (ackResult?.lease_released && sourceQueue) sinkQueues.set(sourceQueue, 1);
    // Capacity unknown per sink partition here: wake every parked pop of the queues touched.
    this.host.notify([...sinkQueues.keys()].map((queue) => [queue, Number.POSITIVE_INFINITY] as const));
    return {
      success: true,
      stateOpsApplied: answer.applied ?? 0,
      pushResults,
      ackResult,
      sourceQueue: ackResult ? sourceQueue : null,
    };
  }

  private async queryExists(queryId: string): Promise<boolean> {
    return (await this.host.redis.hexists(`${this.host.streamsBase}ids`, queryId)) === 1;
  }

  async state(queryId: string, partitionId: string, keys: string[]): Promise<StateRow[] | undefined> {
    if (!(await this.queryExists(queryId))) return undefined;
    const shard = `${this.queryBase(queryId)}s:${partitionId}`;
    const rows: StateRow[] = [];
    const add = (key: string, stored: string | null) => {
      if (stored === null) return;
      const space = stored.indexOf(' ');
      rows.push({ key, value: stored.slice(space + 1), updatedAt: Number(stored.slice(0, space)) });
    };
    if (keys.length === 0) {
      for (const [key, stored] of Object.entries(await this.host.redis.hgetall(shard))) add(key, stored);
    } else {
      const values = await this.host.redis.hmget(shard, ...keys);
      keys.forEach((key, index) => {
        add(key, values[index] ?? null);
      });
    }
    return rows;
  }

  async stats(): Promise<QueryStateStats[]> {
    const [names, stats] = await Promise.all([
      this.host.redis.hgetall(`${this.host.streamsBase}ids`),
      this.host.redis.hgetall(`${this.host.streamsBase}stats`),
    ]);
    return Object.entries(names).map(([id, query]) => ({
      query,
      rows: Number(stats[`r:${id}`] ?? 0),
      bytes: Number(stats[`b:${id}`] ?? 0),
    }));
  }
}

import {
  isCluster,
  isNoScript,
  type LuaScript,
  pipelineScript,
  type RedisClient,
  runScript,
} from '@herald/redis';
import { partitionsOfTopics } from './partitions.js';
import type { RedisClock } from './redis-clock.js';
import type { Published } from './transport.js';
import { encodeUpdate, type Position, type Update } from './update.js';

/** A publish not answered within this bound is answered 503 (docs/hub.md, resent publishes). */
export const PUBLISH_TIMEOUT = 5000;
/**
 * Redis refuses a publish script that starts later than this after the node sent it: shorter than
 * PUBLISH_TIMEOUT, so a publish the node answered 503 can never be applied afterwards (a stalled
 * Redis resuming, a command still in a socket buffer), and a reply has the difference to travel.
 */
const PUBLISH_SCRIPT_BUDGET = 4000;

/** publish-4.lua's reply: the position, and 1 when the id was already in history. */
type PublishReply = [Position, 0 | 1];

/** One partition's keys and channel (docs/hub.md, topic partitions). */
export interface PartitionKeys {
  readonly history: string;
  /** hash: update id -> position of its entry */
  readonly historyIds: string;
  /** sorted set: update ids by the ms of their position (trims the hash) */
  readonly historyIdsByTime: string;
  readonly channel: string;
}

/** One copy of an update: one script call on one partition's keys. */
interface PendingPublish {
  readonly partition: number;
  readonly keys: readonly string[];
  readonly args: (string | number)[];
  readonly resolve: (published: Published) => void;
  readonly reject: (error: unknown) => void;
}

export interface RedisPublisherOptions {
  /** The fail-fast publish connection (a Cluster client on Redis Cluster). */
  readonly publisher: RedisClient;
  readonly clock: RedisClock;
  readonly script: LuaScript;
  /** Each partition's keys (index = partition). */
  readonly partitions: readonly PartitionKeys[];
  readonly historySize: number;
  readonly historyTtl: number;
}

/**
 * The publishing side of the Redis transport: publish-4.lua (append to history and PUBLISH, one
 * atomic step) once per partition of the update's topics, with one deadline Redis itself checks.
 * Publishes of one event loop turn go out as one pipeline: one socket write and one round trip
 * instead of one each (profile of the publish path: the per-command write syscall was the top
 * frame). On Redis Cluster a pipeline may only hold keys of one slot, so it is one pipeline per
 * partition, and the script fans out with SPUBLISH (docs/hub.md, Redis topologies). Each script
 * still runs atomically, in arrival order; one timer bounds the whole batch.
 */
export class RedisPublisher {
  private pending: PendingPublish[] = [];
  /** publish-4.lua's ARGV[6]: '1' for SPUBLISH (Cluster), '0' for PUBLISH. */
  private readonly sharded: string;

  constructor(private readonly options: RedisPublisherOptions) {
    this.sharded = isCluster(options.publisher) ? '1' : '0';
  }

  /**
   * Rejects with the Redis or timeout error of any copy (the caller decides what the client is
   * told); resolves with the copy of the lowest partition, `repeat` when every copy was a repeat.
   */
  async publish(update: Update): Promise<Published> {
    const { partitions, historySize, historyTtl } = this.options;
    const encoded = encodeUpdate(update);
    const copies = partitionsOfTopics(update.topics, partitions.length).map((partition) => {
      const { history, historyIds, historyIdsByTime, channel } = partitions[partition] as PartitionKeys;
      return new Promise<Published>((resolve, reject) => {
        const keys = [history, historyIds, historyIdsByTime, channel];
        this.pending.push({
          partition,
          keys,
          args: [update.id, encoded, historySize, historyTtl],
          resolve,
          reject,
        });
        if (this.pending.length === 1) setImmediate(() => this.flush());
      });
    });
    const published = await Promise.all(copies);
    return {
      position: (published[0] as Published).position,
      repeat: published.every((copy) => copy.repeat),
    };
  }

  private flush(): void {
    const { publisher, clock, script } = this.options;
    const batch = this.pending;
    this.pending = [];
    const deadlineMs = clock.deadline(PUBLISH_SCRIPT_BUDGET);
    if (deadlineMs === undefined) {
      // The connection dropped since publish() checked: nothing was sent.
      for (const pending of batch) pending.reject(new Error('publish: Redis connection lost'));
      return;
    }
    const deadline = String(deadlineMs);
    let unsettled = batch.length;
    const settle = (pending: PendingPublish, error: unknown, reply?: PublishReply) => {
      if (error) pending.reject(error);
      else {
        const [position, repeat] = reply as PublishReply;
        pending.resolve({ position, repeat: repeat === 1 });
      }
      unsettled -= 1;
      if (unsettled === 0) clearTimeout(timer);
    };
    const timer = setTimeout(() => {
      // Later replies are ignored: a promise settles once.
      const error = new Error(`publish: no reply within ${PUBLISH_TIMEOUT} ms`);
      for (const pending of batch) pending.reject(error);
    }, PUBLISH_TIMEOUT);
    const scriptArguments = (pending: PendingPublish) => [...pending.args, deadline, this.sharded];
    for (const group of this.pipelineGroups(batch)) {
      const pipeline = publisher.pipeline();
      for (const pending of group) pipelineScript(pipeline, script, pending.keys, scriptArguments(pending));
      pipeline.exec().then(
        (results) => {
          group.forEach((pending, index) => {
            const [error, reply] = results?.[index] ?? [new Error('publish: no reply'), null];
            // After a Redis restart (or on a promoted replica) the script cache is empty: EVAL reloads it.
            if (isNoScript(error)) {
              runScript<PublishReply>(publisher, script, pending.keys, scriptArguments(pending)).then(
                (reloaded) => settle(pending, undefined, reloaded),
                (retryError: unknown) => settle(pending, retryError),
              );
            } else {
              settle(pending, error, reply as PublishReply);
            }
          });
        },
        (error: unknown) => {
          for (const pending of group) settle(pending, error);
        },
      );
    }
  }

  /** One pipeline for the batch; on a Cluster one per partition (a pipeline holds one slot's keys). */
  private pipelineGroups(batch: readonly PendingPublish[]): PendingPublish[][] {
    if (this.sharded === '0') return [[...batch]];
    const byPartition = new Map<number, PendingPublish[]>();
    for (const pending of batch) {
      const group = byPartition.get(pending.partition);
      if (group) group.push(pending);
      else byPartition.set(pending.partition, [pending]);
    }
    return [...byPartition.values()];
  }
}

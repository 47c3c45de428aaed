import { isNoScript, type LuaScript, pipelineScript, type Redis, runScript } from '@herald/redis';
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

/** publish-3.lua's reply: the position, and 1 when the id was already in history. */
type PublishReply = [Position, 0 | 1];

interface PendingPublish {
  readonly args: (string | number)[];
  readonly resolve: (published: Published) => void;
  readonly reject: (error: unknown) => void;
}

export interface RedisPublisherOptions {
  /** The fail-fast publish connection. */
  readonly publisher: Redis;
  readonly clock: RedisClock;
  readonly script: LuaScript;
  /** publish-3.lua's KEYS: history stream, id -> position hash, ids by time. */
  readonly keys: readonly [string, string, string];
  readonly channel: string;
  readonly historySize: number;
  readonly historyTtl: number;
}

/**
 * The publishing side of the Redis transport: publish-3.lua (append to history and PUBLISH, one
 * atomic step), with a deadline Redis itself checks. Publishes of one event loop turn go out as one
 * pipeline: one socket write and one round trip instead of one each (profile of the publish path:
 * the per-command write syscall was the top frame). Each script still runs atomically, in arrival
 * order; one timer bounds the whole batch.
 */
export class RedisPublisher {
  private pending: PendingPublish[] = [];

  constructor(private readonly options: RedisPublisherOptions) {}

  /** Rejects with the Redis or timeout error; the caller decides what the client is told. */
  publish(update: Update): Promise<Published> {
    const { channel, historySize, historyTtl } = this.options;
    return new Promise<Published>((resolve, reject) => {
      const args = [channel, update.id, encodeUpdate(update), historySize, historyTtl];
      this.pending.push({ args, resolve, reject });
      if (this.pending.length === 1) setImmediate(() => this.flush());
    });
  }

  private flush(): void {
    const { publisher, clock, script, keys } = this.options;
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
    const pipeline = publisher.pipeline();
    for (const pending of batch) pipelineScript(pipeline, script, keys, [...pending.args, deadline]);
    pipeline.exec().then(
      (results) => {
        batch.forEach((pending, index) => {
          const [error, reply] = results?.[index] ?? [new Error('publish: no reply'), null];
          // After a Redis restart the script cache is empty: EVAL reloads it.
          if (isNoScript(error)) {
            runScript<PublishReply>(publisher, script, keys, [...pending.args, deadline]).then(
              (reloaded) => settle(pending, undefined, reloaded),
              (retryError: unknown) => settle(pending, retryError),
            );
          } else {
            settle(pending, error, reply as PublishReply);
          }
        });
      },
      (error: unknown) => {
        for (const pending of batch) settle(pending, error);
      },
    );
  }
}

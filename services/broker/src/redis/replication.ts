/*
 * BROKER_MIN_REPLICAS_ACK (docs/broker-topologies.md, "Replica acknowledgement"): a state-changing script
 * answers only once `replicas` replicas hold its effects, confirmed by Redis `WAIT`.
 *
 * WAIT counts the replicas that acknowledged the replication offset of the calling client's last
 * write, on the server it is sent to. So each write is one pipeline on one connection:
 *
 *   EVALSHA <script>   the write (or nothing, when it is a repeat: a duplicate push, a repeated ack)
 *   SET <slot>replicated '' PX 60000   always replicated, so the client's offset is at least the
 *                      primary's offset after the script, whether the script wrote or not: a
 *                      repeat answered after a retry is covered too, and so is the first attempt
 *                      another node made (the replication stream is one ordered log per primary)
 *   WAIT <replicas> <timeoutMs>
 *
 * On Redis Cluster ioredis sends a pipeline to the primary of its keys' slot, in one write on that
 * node's connection (`Pipeline.exec`: the script's KEYS and the marker share the hash tag; WAIT
 * has no key and goes with them). A node connection is never re-established with its commands
 * re-sent (no `clusterNodeRetryStrategy`), and a pipeline is re-run on the slot's new owner only
 * when every command of it failed alike, i.e. all of it re-runs there. On standalone and Sentinel,
 * ioredis re-sends a command left unanswered by a lost connection on the next one, which after a
 * failover is another server: a pipeline during which the connection closed is therefore refused
 * (`RedisUnavailableError`, the ambiguous 503 of docs/broker-operations.md, "Outages"), never trusted.
 */
import {
  isCluster,
  isNoScript,
  type LuaScript,
  type RedisClient,
  RedisUnavailableError,
  scriptCommand,
} from '@herald/redis';
import type { Command, Pipeline } from 'ioredis';
import { replicationTimeout } from '../errors.js';

export interface ReplicaAck {
  /** Replicas that must confirm (WAIT's numreplicas); 0 turns the barrier off. */
  readonly replicas: number;
  /** WAIT's timeout (ms). */
  readonly timeoutMs: number;
}

/** Suffix of the marker key written in the slot of each covered write. */
export const MARKER_SUFFIX = 'replicated';
/** The marker only has to exist for the instant of its write: it expires on its own. */
const MARKER_TTL_MS = 60_000;

type PipelineReply = [Error | null, unknown];

/**
 * Redis Cluster's redirections and refusals: the script did not run on that node. ioredis
 * follows them for a pipeline only when every command failed alike, which WAIT (run, or refused
 * by a replica) prevents: such a write is "not done, retry" (503), not a failure of the script.
 */
const NOT_RUN = /^(MOVED|ASK|TRYAGAIN|CLUSTERDOWN) /;

/** Runs scripts on one connection, each followed by the replica barrier above. */
export class ReplicatedWrites {
  /** Standalone and Sentinel: bumped when the connection closes (see the header). */
  private connectionEpoch = 0;

  constructor(
    private readonly client: RedisClient,
    private readonly ack: ReplicaAck,
  ) {
    if (!isCluster(client)) {
      client.on('close', () => {
        this.connectionEpoch += 1;
      });
    }
  }

  /**
   * The script's reply once `ack.replicas` replicas confirmed it; `markerKey` must share the
   * keys' hash tag. Throws the script's own error, a `RedisUnavailableError` when the outcome is
   * unknown, or `replicationTimeout` (503) when the script ran but too few replicas confirmed.
   */
  async run<T>(
    script: LuaScript,
    keys: readonly string[],
    args: readonly (string | number)[],
    markerKey: string,
    replyBytes = 0,
  ): Promise<T> {
    if (keys.length !== script.numberOfKeys) {
      throw new Error(`script ${script.name} takes ${script.numberOfKeys} keys, got ${keys.length}`);
    }
    try {
      return await this.once<T>(scriptCommand('evalsha', script.sha, keys, args, replyBytes), markerKey);
    } catch (error) {
      if (!isNoScript(error)) throw error;
      return this.once<T>(scriptCommand('eval', script.source, keys, args, replyBytes), markerKey);
    }
  }

  private async once<T>(command: Command, markerKey: string): Promise<T> {
    const epoch = this.connectionEpoch;
    const pipeline = this.client.pipeline() as Pipeline;
    pipeline.sendCommand(command);
    const replies = (await pipeline
      .set(markerKey, '', 'PX', MARKER_TTL_MS)
      .call('wait', this.ack.replicas, this.ack.timeoutMs)
      .exec()) as PipelineReply[] | null;
    const [script, marker, wait] = replies ?? [];
    if (!script || !marker || !wait) throw new Error('replicated write: the pipeline answered no replies');
    if (script[0]) {
      // A failover moved the slot: a pipeline's MOVED does not teach ioredis the new owner (a
      // single command's does), so the map is refreshed here or every later write fails too.
      if (isCluster(this.client) && /^(MOVED|ASK) /.test(script[0].message)) this.client.refreshSlotsCache();
      throw NOT_RUN.test(script[0].message)
        ? new RedisUnavailableError('not-serving', script[0].message, { cause: script[0] })
        : script[0];
    }
    if (marker[0]) throw marker[0];
    if (wait[0]) throw wait[0];
    if (this.connectionEpoch !== epoch) {
      throw new RedisUnavailableError(
        'disconnected',
        'the connection was lost during a replicated write: its WAIT may have run on another server',
      );
    }
    const acknowledged = Number(wait[1]);
    if (acknowledged < this.ack.replicas) {
      throw replicationTimeout(acknowledged, this.ack.replicas, this.ack.timeoutMs);
    }
    return script[1] as T;
  }
}

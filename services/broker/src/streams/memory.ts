import type { Clock } from '@herald/redis';
import { STREAMS_LIMITS } from './limits.js';
import type {
  CycleInput,
  CycleOutcome,
  PrepareCycle,
  QueryRegistration,
  QueryStateStats,
  RegisterOutcome,
  StateRow,
  StreamsStorage,
} from './types.js';

/*
 * Streams state on the in-process backend: the same rules as lua/streams-register-1.lua and
 * lua/streams-cycle-2.lua on plain maps. Each method runs synchronously between two awaits,
 * which makes a cycle (state, sink pushes, source ack) atomic as the Lua script is.
 */

interface Query {
  id: string;
  name: string;
  sourceQueue: string;
  sinkQueue: string | null;
  configHash: string;
  /** shard (partition id) -> key -> row; bytes per shard kept alongside. */
  shards: Map<string, Map<string, { value: string; updatedAt: number }>>;
  shardBytes: Map<string, number>;
  rows: number;
  bytes: number;
}

const rowBytes = (key: string, value: string) => Buffer.byteLength(key) + Buffer.byteLength(value);

export class MemoryStreams implements StreamsStorage {
  private readonly byName = new Map<string, Query>();
  private readonly byId = new Map<string, Query>();
  /** Committed cycles' answers by cycle id, kept cycleMemorySeconds (lua cy:<cycleId>). */
  private readonly answers = new Map<string, { expiresAt: number; outcome: CycleOutcome }>();
  private answersSweepAt = 1024;

  constructor(
    private readonly prepareCycle: PrepareCycle,
    private readonly clock: Clock,
  ) {}

  async register(registration: QueryRegistration): Promise<RegisterOutcome> {
    const existing = this.byName.get(registration.name);
    if (!existing) {
      if (this.byName.size >= STREAMS_LIMITS.maxQueries) {
        return {
          success: false,
          conflict: 'full',
          queryId: null,
          error: `at most ${STREAMS_LIMITS.maxQueries} streams queries may be registered`,
        };
      }
      const query: Query = {
        id: registration.requestId,
        name: registration.name,
        sourceQueue: registration.sourceQueue,
        sinkQueue: registration.sinkQueue,
        configHash: registration.configHash,
        shards: new Map(),
        shardBytes: new Map(),
        rows: 0,
        bytes: 0,
      };
      this.byName.set(query.name, query);
      this.byId.set(query.id, query);
      return { success: true, queryId: query.id, fresh: true, reset: false };
    }
    let reset = false;
    if (existing.configHash !== registration.configHash) {
      if (!registration.reset) {
        return {
          success: false,
          conflict: 'hash',
          queryId: existing.id,
          error: `config_hash mismatch: operator chain changed for queryId '${registration.name}'. Pass reset:true to wipe existing state, or use a new queryId.`,
        };
      }
      existing.shards.clear();
      existing.shardBytes.clear();
      existing.rows = 0;
      existing.bytes = 0;
      existing.configHash = registration.configHash;
      reset = true;
    }
    existing.sourceQueue = registration.sourceQueue;
    existing.sinkQueue = registration.sinkQueue;
    return { success: true, queryId: existing.id, fresh: false, reset };
  }

  async cycle(input: CycleInput): Promise<CycleOutcome | undefined> {
    const now = this.clock.now();
    const remembered = this.answers.get(input.cycleId);
    if (remembered && remembered.expiresAt > now) return remembered.outcome;
    const query = this.byId.get(input.queryId);
    if (!query) return undefined;
    const prepared = this.prepareCycle(
      input.pushItems,
      input.ack
        ? {
            partitionId: input.partitionId,
            group: input.group,
            ack: input.ack,
            releaseLease: input.releaseLease,
          }
        : null,
    );
    if (typeof prepared === 'string') return { success: false, error: prepared };
    const shard =
      query.shards.get(input.partitionId) ?? new Map<string, { value: string; updatedAt: number }>();
    // The shard after the ops, against its bounds, before anything is written.
    const final = new Map<string, number | undefined>();
    let rows = shard.size;
    let bytes = query.shardBytes.get(input.partitionId) ?? 0;
    const [rowsBefore, bytesBefore] = [rows, bytes];
    for (const op of input.stateOps) {
      const known = final.has(op.key) ? final.get(op.key) : shardRowBytes(shard, op.key);
      if (known !== undefined) {
        rows--;
        bytes -= known;
      }
      const size = op.type === 'upsert' ? rowBytes(op.key, op.value) : undefined;
      if (size !== undefined) {
        rows++;
        bytes += size;
      }
      final.set(op.key, size);
    }
    if (rows > rowsBefore && rows > STREAMS_LIMITS.maxStateRowsPerShard) {
      return {
        success: false,
        error: `state shard is full: ${rows} rows (max ${STREAMS_LIMITS.maxStateRowsPerShard})`,
      };
    }
    if (bytes > bytesBefore && bytes > STREAMS_LIMITS.maxStateBytesPerShard) {
      return {
        success: false,
        error: `state shard is full: ${bytes} bytes (max ${STREAMS_LIMITS.maxStateBytesPerShard})`,
      };
    }
    for (const op of input.stateOps) {
      if (op.type === 'upsert') shard.set(op.key, { value: op.value, updatedAt: now });
      else shard.delete(op.key);
    }
    if (input.stateOps.length > 0) {
      if (shard.size > 0) {
        query.shards.set(input.partitionId, shard);
        query.shardBytes.set(input.partitionId, bytes);
      } else {
        query.shards.delete(input.partitionId);
        query.shardBytes.delete(input.partitionId);
      }
      query.rows += rows - rowsBefore;
      query.bytes += bytes - bytesBefore;
    }
    const queues = prepared();
    const outcome: CycleOutcome = {
      success: true,
      stateOpsApplied: input.stateOps.length,
      ...queues,
    };
    this.remember(input.cycleId, outcome, now);
    return outcome;
  }

  private remember(cycleId: string, outcome: CycleOutcome, now: number): void {
    if (this.answers.size >= this.answersSweepAt) {
      for (const [id, entry] of this.answers) if (entry.expiresAt <= now) this.answers.delete(id);
      this.answersSweepAt = Math.max(1024, this.answers.size * 2);
    }
    this.answers.set(cycleId, { expiresAt: now + STREAMS_LIMITS.cycleMemorySeconds * 1000, outcome });
  }

  async state(queryId: string, partitionId: string, keys: string[]): Promise<StateRow[] | undefined> {
    const query = this.byId.get(queryId);
    if (!query) return undefined;
    const shard = query.shards.get(partitionId);
    if (!shard) return [];
    const wanted = keys.length > 0 ? keys : [...shard.keys()];
    return wanted.flatMap((key) => {
      const row = shard.get(key);
      return row ? [{ key, value: row.value, updatedAt: row.updatedAt }] : [];
    });
  }

  async stats(): Promise<QueryStateStats[]> {
    return [...this.byName.values()].map((query) => ({
      query: query.name,
      rows: query.rows,
      bytes: query.bytes,
    }));
  }
}

function shardRowBytes(shard: Map<string, { value: string }>, key: string): number | undefined {
  const row = shard.get(key);
  return row ? rowBytes(key, row.value) : undefined;
}

import { encryptionChanged } from '../errors.js';
import { namespaceAndTask, partitionIdOf } from '../identifiers.js';
import { forEachBounded, QUEUES_IN_FLIGHT } from '../redis/bounded.js';
import { type RedisBackend, type Reply, slotTag } from '../redis/context.js';
import { OUTBOX_MARK_GRACE_MS, pushItemArguments, RedisTransactions, Share } from '../redis/transactions.js';
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

/** The registry's record of a query, as lua/streams-register-1.lua writes it. */
interface QueryRecord {
  id: string;
  source: string;
  /** State generation: a reset starts the next one (absent before resets existed: 0). */
  gen?: number;
  /** The queue whose slot holds the state (absent on records older than slots: the source). */
  home?: string;
}

/** Where one generation of a query's state lives (lua/streams-cycle-2.lua's KEYS and fields). */
interface QueryLocation {
  id: string;
  gen: number;
  home: string;
  /** KEYS[1] of the cycle and drop scripts. */
  queryBase: string;
  /** The generation's keys: the query base itself for generation 0. */
  stateBase: string;
  statsKey: string;
  /** The stats hash fields' suffix: the id, `<id>:<gen>` after a reset. */
  field: string;
}

/** A cycle refused because a reset started a new generation meanwhile is tried again this often. */
const STALE_ATTEMPTS = 5;

interface LuaCycleAnswer {
  /** The query was reset since its generation was read: nothing applied. */
  stale?: true;
  /** A sink queue has encryptionEnabled and a push to it was not sealed: nothing applied. */
  clear?: string;
  ok?: boolean;
  error?: string;
  applied?: number;
  /** cjson writes an empty list as {}. */
  pushes?: LuaPush[] | Record<string, never>;
  ack?: { count: number; released: number; dlq: number } | false;
  /** Outbox intents recorded by pushes to bridged sink queues (lua/includes/outbox.lua). */
  intents?: number;
  /** The transaction across slots the cycle committed, and its shares' queues. */
  txid?: string;
  shares?: string[][];
}

/**
 * Why the shares of a cycle across slots cannot commit: the first refusal (its error), a failure
 * to throw (a share's prepare failed in transit; a push in clear to a queue encrypted meanwhile),
 * or undefined when every share was prepared.
 */
function prepareRefusal(
  prepared: PromiseSettledResult<Reply[]>[],
  shares: readonly Share[],
  input: CycleInput,
): { error: string } | { thrown: unknown } | undefined {
  for (const settled of prepared) if (settled.status === 'rejected') return { thrown: settled.reason };
  for (const [position, settled] of prepared.entries()) {
    const reply = (settled as PromiseFulfilledResult<Reply[]>).value;
    const share = shares[position] as Share;
    if (reply[0] === 'CLEAR') {
      const index = share.indexes[Number(reply[1])] as number;
      return { thrown: encryptionChanged(input.pushItems[index]?.queue ?? '') };
    }
    if (reply[0] === 'FAIL') return { error: String(reply[2]) };
  }
  return undefined;
}

interface LuaPush {
  queue: string;
  partitionId: string;
  transactionId: string;
  queued: number;
  messageId: string;
}

/**
 * Streams on Redis: registration and cycles are one Lua script each (lua/streams-register-1.lua,
 * lua/streams-cycle-2.lua, where the key layout is listed); state reads are plain hash reads.
 * The registry (query name → record, id → name) is one slot; a query's state, cycle answers and
 * stats are in another: under the query's own hash tag, or where slots are enforced in its home
 * queue's slot, so one script covers state, source ack and sink pushes (docs/broker-streams.md, "Streams").
 */
export class RedisStreams implements StreamsStorage {
  /** Queries are never deleted: a location stays valid until a reset starts a new generation. */
  private readonly locations = new Map<string, QueryLocation>();
  private readonly transactions: RedisTransactions;

  constructor(
    private readonly backend: RedisBackend,
    /** `<prefix>streams:`, or `<prefix>{streams}:` where slots are enforced (one slot for the registry). */
    private readonly registryBase: string,
  ) {
    this.transactions = new RedisTransactions(backend);
  }

  private locate(record: QueryRecord): QueryLocation {
    const gen = record.gen ?? 0;
    const home = record.home ?? record.source;
    const queryBase = this.backend.oneSlot
      ? `${this.backend.base(home)}~streams:${record.id}:`
      : `${this.registryBase}{${record.id}}:`;
    return {
      id: record.id,
      gen,
      home,
      queryBase,
      stateBase: gen === 0 ? queryBase : `${queryBase}g${gen}:`,
      statsKey: this.backend.oneSlot ? `${queryBase}stats` : `${this.registryBase}stats`,
      field: gen === 0 ? record.id : `${record.id}:${gen}`,
    };
  }

  private remember(location: QueryLocation): QueryLocation {
    this.locations.set(location.id, location);
    return location;
  }

  /** The query's location, from the registry when not known or `fresh`; undefined: no such query. */
  private async location(queryId: string, fresh = false): Promise<QueryLocation | undefined> {
    const known = fresh ? undefined : this.locations.get(queryId);
    if (known) return known;
    const name = await this.backend.redis.hget(`${this.registryBase}ids`, queryId);
    if (name === null) return undefined;
    const raw = await this.backend.redis.hget(`${this.registryBase}queries`, name);
    return raw === null ? undefined : this.remember(this.locate(JSON.parse(raw) as QueryRecord));
  }

  /** Deletes the generations below the current one (lua/streams-drop-2.lua); a no-op when none. */
  private async drop(location: QueryLocation): Promise<void> {
    await this.backend.run(
      'streams-drop',
      [location.queryBase, location.statsKey],
      [location.gen, location.id],
    );
  }

  async register(registration: QueryRegistration): Promise<RegisterOutcome> {
    const { sourceQueue, sinkQueue } = registration;
    const sourceTag = this.backend.oneSlot ? slotTag(this.backend.base(sourceQueue)) : '';
    const reply = await this.backend.run(
      'streams-register',
      [this.registryBase],
      [
        registration.name,
        sourceQueue,
        sinkQueue ?? '',
        registration.configHash,
        registration.reset ? '1' : '0',
        registration.requestId,
        STREAMS_LIMITS.maxQueries,
        sourceTag,
      ],
    );
    const answer = JSON.parse(String(reply)) as {
      success: boolean;
      query_id?: string;
      fresh?: boolean;
      reset?: boolean;
      gen?: number;
      home?: string;
      previous_home?: string;
      conflict?: 'hash' | 'full' | 'slot';
      error?: string;
    };
    if (!answer.success) {
      return {
        success: false,
        conflict: answer.conflict ?? 'hash',
        queryId: answer.query_id ?? null,
        error: answer.error ?? 'registration refused',
      };
    }
    const queryId = answer.query_id as string;
    const record = { id: queryId, source: sourceQueue, gen: answer.gen ?? 0, home: answer.home };
    // Every registration finishes any reset's drop (this one's, or one whose node died before it).
    if (answer.previous_home) await this.drop(this.locate({ ...record, home: answer.previous_home }));
    await this.drop(this.remember(this.locate(record)));
    return { success: true, queryId, fresh: answer.fresh === true, reset: answer.reset === true };
  }

  async cycle(input: CycleInput): Promise<CycleOutcome | undefined> {
    let location = await this.location(input.queryId);
    if (!location) return undefined;
    for (const item of input.pushItems) {
      await this.backend.registry.register(item.queue, [
        [item.partition, partitionIdOf(item.queue, item.partition)],
      ]);
    }
    let source: [string, string] | undefined;
    if (input.ack) {
      source = await this.backend.registry.resolve(input.partitionId);
      // Checked before the script: an unknown partition is the ack's 'Message not found'.
      if (!source) return { success: false, error: 'Message not found' };
    }
    for (let attempt = 1; attempt <= STALE_ATTEMPTS; attempt++) {
      const outcome = await this.commit(input, location, source);
      if (outcome !== 'stale') return outcome;
      location = await this.location(input.queryId, true);
      if (!location) return undefined;
    }
    return {
      success: false,
      error: 'the query was reset while the cycle ran; nothing applied, send it again',
    };
  }

  /**
   * One run of the cycle script at `location`; 'stale': a reset started a newer generation.
   * Pushes to queues outside the state's slot (Redis Cluster) are the shares of a transaction
   * across slots (redis/transactions.ts): prepared before the script, which commits them with the
   * cycle, and applied after; a refusal anywhere releases them and applies nothing.
   */
  private async commit(
    input: CycleInput,
    location: QueryLocation,
    source: [string, string] | undefined,
  ): Promise<CycleOutcome | 'stale'> {
    const { backend } = this;
    const keys = [location.queryBase, location.statsKey];
    const slot = slotTag(location.queryBase);
    /** KEYS index of a queue's base (declared once each); undefined: outside the state's slot. */
    const keyOf = (queue: string): number | undefined => {
      const base = backend.base(queue);
      if (backend.oneSlot && slotTag(base) !== slot) return undefined;
      const index = keys.indexOf(base);
      return index >= 0 ? index + 1 : keys.push(base);
    };
    const args: (string | number)[] = [
      input.cycleId,
      location.field,
      location.gen,
      input.partitionId,
      STREAMS_LIMITS.cycleMemorySeconds,
      STREAMS_LIMITS.maxStateRowsPerShard,
      STREAMS_LIMITS.maxStateBytesPerShard,
      input.stateOps.length,
    ];
    for (const op of input.stateOps) {
      args.push(op.type === 'upsert' ? 'u' : 'd', op.key, op.type === 'upsert' ? op.value : '');
    }
    /** The pushes in the state's slot (their index in input.pushItems), then the other slots'. */
    const local: number[] = [];
    const localArgs: (string | number)[] = [];
    const shares = new Map<string, Share>();
    const records = this.backend.writesRecords;
    for (const [index, item] of input.pushItems.entries()) {
      const { namespace, task } = namespaceAndTask(item.queue);
      const partitionId = partitionIdOf(item.queue, item.partition);
      const key = keyOf(item.queue);
      if (key !== undefined) {
        local.push(index);
        localArgs.push(key, namespace, task, item.queue, ...pushItemArguments(item, partitionId, records));
        continue;
      }
      const tag = slotTag(backend.base(item.queue));
      let share = shares.get(tag);
      if (!share) {
        share = new Share(backend);
        shares.set(tag, share);
      }
      share.add({
        index,
        queue: item.queue,
        kind: 'push',
        rest: [namespace, task, ...pushItemArguments(item, partitionId, records)],
      });
    }
    args.push(local.length, ...localArgs);
    if (input.ack && source) {
      const key = keyOf(source[0]);
      if (key === undefined) return { success: false, error: outsideSlot(source[0], location.home) };
      const { ack } = input;
      args.push(
        '1',
        key,
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
    const foreign = [...shares.values()];
    if (foreign.length === 0) {
      args.push('0');
      return this.answer(input, source, local, await this.run(keys, args), []);
    }

    // Across slots: recorded, the shares prepared, then the cycle commits them (the decision and
    // the apply intent in the home queue's slot: its outbox is marked for the relays first).
    const home = keyOf(location.home) as number;
    const { txid, deadline } = await this.transactions.begin([location.home], foreign);
    await backend.outbox.mark(location.home, backend.clock.now() + OUTBOX_MARK_GRACE_MS);
    const refusal = prepareRefusal(await this.transactions.prepare(txid, deadline, foreign), foreign, input);
    if (refusal) {
      await this.transactions.release(txid, foreign);
      if ('thrown' in refusal) throw refusal.thrown;
      return { success: false, error: refusal.error };
    }
    args.push(
      '1',
      txid,
      JSON.stringify(foreign.map((share) => share.queues)),
      this.transactions.memorySeconds,
      home,
    );
    // Thrown (a reply lost, a replica barrier timed out): it may have committed; recovery
    // decides from the home queue's slot (the record stays).
    const answer = await this.run(keys, args);
    if (!answer.ok || answer.txid !== txid) await this.transactions.release(txid, foreign);
    if (!answer.ok) return this.answer(input, source, local, answer, []);
    // Committed by this run, or earlier by the same request (its answer kept under the cycle
    // id): the shares of the transaction that committed hold the other pushes. (A kept answer
    // without one, from a node before cycles spanned slots, had none.)
    const committed = answer.txid;
    const applied =
      committed === undefined
        ? []
        : await this.transactions.finish(committed, committed === txid ? foreign : (answer.shares ?? []));
    const rows = foreign.map((share, position) => ({ indexes: share.indexes, rows: applied[position] }));
    return this.answer(input, source, local, answer, rows);
  }

  private async run(keys: string[], args: (string | number)[]): Promise<LuaCycleAnswer> {
    return JSON.parse(String(await this.backend.run('streams-cycle', keys, args))) as LuaCycleAnswer;
  }

  /**
   * The cycle's outcome from the script's answer: `local` maps its pushes back to the request's,
   * `shares` gives the other slots' pushes (their results, undefined when not applied now: the
   * relay applies them, under the messageIds the node chose).
   */
  private answer(
    input: CycleInput,
    source: [string, string] | undefined,
    local: readonly number[],
    answer: LuaCycleAnswer,
    shares: readonly { indexes: readonly number[]; rows: Reply[][] | undefined }[],
  ): CycleOutcome | 'stale' {
    if (answer.stale) return 'stale';
    // PayloadEncryption.store reads the option again, seals and sends the cycle once more.
    if (answer.clear !== undefined) throw encryptionChanged(answer.clear);
    if (!answer.ok) return { success: false, error: answer.error ?? 'cycle refused' };
    const sourceQueue = source?.[0] ?? null;
    const sinkQueues = new Set<string>();
    const pushResults: PushResult[] = new Array(input.pushItems.length);
    const result = (
      index: number,
      queued: boolean,
      messageId: string,
      transactionId?: string,
    ): PushResult => {
      const item = input.pushItems[index] as CycleInput['pushItems'][number];
      return {
        transactionId: transactionId ?? item.transactionId,
        status: queued ? 'queued' : 'duplicate',
        messageId,
        partitionId: partitionIdOf(item.queue, item.partition),
        traceId: item.traceId ?? null,
        queue: item.queue,
      };
    };
    // A kept answer (a retried body) names the first request's transaction ids.
    const pushes = Array.isArray(answer.pushes) ? answer.pushes : [];
    pushes.forEach((push, position) => {
      if (push.queued === 1) sinkQueues.add(push.queue);
      const index = local[position] as number;
      pushResults[index] = result(index, push.queued === 1, push.messageId, push.transactionId);
    });
    for (const share of shares) {
      share.indexes.forEach((index, position) => {
        const row = share.rows?.[position];
        const item = input.pushItems[index] as CycleInput['pushItems'][number];
        pushResults[index] =
          row === undefined
            ? result(index, true, item.messageId)
            : result(index, row[1] === 1, String(row[2]), String(row[3]));
      });
    }
    const ackResult = answer.ack
      ? { count: answer.ack.count, leaseReleased: answer.ack.released === 1, dlq: answer.ack.dlq === 1 }
      : null;
    if (ackResult?.leaseReleased && sourceQueue) sinkQueues.add(sourceQueue);
    // Which sink's bridge recorded them is not said: each queue pushed to is looked at.
    if ((answer.intents ?? 0) > 0) for (const push of pushes) this.backend.outbox.recorded(push.queue);
    // Capacity unknown per sink partition here: wake every parked pop of the queues touched (the
    // other slots' queues: woken by their apply).
    this.backend.notifications.notify(
      [...sinkQueues].map((queue) => [queue, Number.POSITIVE_INFINITY] as const),
    );
    return {
      success: true,
      stateOpsApplied: answer.applied ?? 0,
      pushResults,
      ackResult,
      sourceQueue: ackResult ? sourceQueue : null,
    };
  }

  async state(queryId: string, partitionId: string, keys: string[]): Promise<StateRow[] | undefined> {
    let location = await this.location(queryId);
    for (let attempt = 1; location && attempt <= STALE_ATTEMPTS; attempt++) {
      // The generation marker in the same transaction: a newer one means a reset dropped this one.
      const shard = `${location.stateBase}s:${partitionId}`;
      const read = this.backend.redis.multi().get(`${location.queryBase}gen`);
      if (keys.length === 0) read.hgetall(shard);
      else read.hmget(shard, ...keys);
      const replies = (await read.exec()) ?? [];
      for (const [error] of replies) if (error) throw error;
      if (Number(replies[0]?.[1] ?? 0) <= location.gen) {
        return stateRows(keys, replies[1]?.[1] as Record<string, string> | (string | null)[]);
      }
      location = await this.location(queryId, true);
    }
    return location ? [] : undefined;
  }

  async stats(): Promise<QueryStateStats[]> {
    const records = Object.entries(await this.backend.redis.hgetall(`${this.registryBase}queries`)).map(
      ([query, raw]) => ({ query, location: this.locate(JSON.parse(raw) as QueryRecord) }),
    );
    const counts = new Map<string, (string | null)[]>();
    if (this.backend.oneSlot) {
      await forEachBounded(records, QUEUES_IN_FLIGHT, async ({ location }) => {
        const { statsKey, field } = location;
        counts.set(location.id, await this.backend.redis.hmget(statsKey, `r:${field}`, `b:${field}`));
      });
    } else {
      const all = await this.backend.redis.hgetall(`${this.registryBase}stats`);
      for (const { location } of records) {
        counts.set(location.id, [all[`r:${location.field}`] ?? null, all[`b:${location.field}`] ?? null]);
      }
    }
    return records.map(({ query, location }) => {
      const [rows, bytes] = counts.get(location.id) ?? [];
      return { query, rows: Number(rows ?? 0), bytes: Number(bytes ?? 0) };
    });
  }
}

/** The rows of a shard read, in `keys`' order (every row of the hash when `keys` is empty). */
function stateRows(keys: string[], read: Record<string, string> | (string | null)[]): StateRow[] {
  const entries: [string, string | null][] = Array.isArray(read)
    ? keys.map((key, index) => [key, read[index] ?? null])
    : Object.entries(read);
  const rows: StateRow[] = [];
  for (const [key, stored] of entries) {
    if (stored === null) continue;
    const space = stored.indexOf(' ');
    rows.push({ key, value: stored.slice(space + 1), updatedAt: Number(stored.slice(0, space)) });
  }
  return rows;
}

/** A cycle acking a source queue outside the state's slot (its registration moved it without a reset). */
const outsideSlot = (queue: string, home: string) =>
  `source queue '${queue}' is not in the Redis Cluster slot of queue '${home}', where this query keeps its state: ` +
  'register the query again with a changed config_hash and reset:true (docs/broker-streams.md, "Streams")';

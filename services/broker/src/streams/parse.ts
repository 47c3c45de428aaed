import { createHash } from 'node:crypto';
import { invalidRequest } from '../errors.js';
import { parsePushItem } from '../push.js';
import { QUEUE_MODE } from '../storage.js';
import { boundedString, integer, isObject, LIMITS, list, name, optionalString } from '../validation.js';
import { STREAMS_LIMITS } from './limits.js';
import type { CycleAck, CycleAckStatus, CycleInput, QueryRegistration, StateOp } from './types.js';

/*
 * The wire of /streams/v1/* (Queen's server/src/routes/streams/*.cpp and the SQL they call),
 * checked and bounded here (docs/security.md, "Limits"): a malformed request is a 400 before
 * any storage work.
 */

function requireBody(body: unknown) {
  if (!isObject(body)) throw invalidRequest('request body must be a JSON object');
  return body;
}

/** A state key or prefix: any string (empty included) of bounded length, well-formed Unicode. */
function boundedKey(value: unknown, what: string, max: number): string {
  if (typeof value !== 'string') throw invalidRequest(`${what} must be a string`);
  return boundedString(value, what, max);
}

export function parseRegistration(body: unknown, requestId: string): QueryRegistration {
  const raw = requireBody(body);
  return {
    name: name(raw.name, 'name'),
    sourceQueue: name(raw.source_queue, 'source_queue'),
    sinkQueue:
      raw.sink_queue === undefined || raw.sink_queue === null || raw.sink_queue === ''
        ? null
        : name(raw.sink_queue, 'sink_queue'),
    configHash: name(raw.config_hash, 'config_hash'),
    reset: raw.reset === undefined || raw.reset === null ? false : strictBoolean(raw.reset, 'reset'),
    requestId,
  };
}

function strictBoolean(value: unknown, what: string): boolean {
  if (typeof value !== 'boolean') throw invalidRequest(`${what} must be true or false`);
  return value;
}

function parseStateOp(raw: unknown, where: string): StateOp {
  if (!isObject(raw)) throw invalidRequest(`${where} must be an object`);
  const key = boundedKey(raw.key, `${where}.key`, STREAMS_LIMITS.maxStateKeyLength);
  if (raw.type === 'delete') return { type: 'delete', key };
  if (raw.type !== 'upsert') throw invalidRequest(`${where}.type must be upsert or delete`);
  // Queen stores a missing value as {} (COALESCE in streams_cycle_v1).
  const value = raw.value === undefined || raw.value === null ? '{}' : JSON.stringify(raw.value);
  if (Buffer.byteLength(value) > STREAMS_LIMITS.maxStateValueBytes) {
    throw invalidRequest(`${where}.value exceeds ${STREAMS_LIMITS.maxStateValueBytes} bytes`);
  }
  return { type: 'upsert', key, value };
}

const ACK_STATUSES: readonly CycleAckStatus[] = ['completed', 'success', 'failed', 'dlq'];

function parseCycleAck(raw: unknown): CycleAck | null {
  if (raw === undefined || raw === null) return null;
  if (!isObject(raw)) throw invalidRequest('ack must be an object');
  const status = raw.status === undefined || raw.status === null ? 'completed' : raw.status;
  if (!ACK_STATUSES.includes(status as CycleAckStatus)) {
    throw invalidRequest(`ack.status must be one of ${ACK_STATUSES.join(', ')}`);
  }
  return {
    transactionId: name(raw.transactionId, 'ack.transactionId'),
    leaseId: optionalString(raw.leaseId, 'ack.leaseId'),
    status: status as CycleAckStatus,
    count: integer(raw.count ?? undefined, 'ack.count', 1, 0, LIMITS.maxBatch),
    error: optionalString(raw.error, 'ack.error', LIMITS.maxAckErrorLength),
  };
}

/** A cycle's identity: the same body (a client retry, a resend) gives the same id. */
function cycleIdOf(parts: unknown[]): string {
  return createHash('sha256').update(JSON.stringify(parts)).digest('hex');
}

export function parseCycle(
  body: unknown,
  producerSub: string | undefined,
  maxPayloadBytes: number,
): CycleInput {
  const raw = requireBody(body);
  const queryId = name(raw.query_id, 'query_id');
  const partitionId = name(raw.partition_id, 'partition_id');
  const group =
    raw.consumer_group === undefined || raw.consumer_group === null || raw.consumer_group === ''
      ? QUEUE_MODE
      : name(raw.consumer_group, 'consumer_group');
  const releaseLease =
    raw.release_lease === undefined || raw.release_lease === null
      ? true
      : strictBoolean(raw.release_lease, 'release_lease');
  const rawOps = raw.state_ops ?? [];
  const rawPushes = raw.push_items ?? [];
  const stateOps = list(rawOps, 'state_ops', STREAMS_LIMITS.maxStateOps).map((op, index) =>
    parseStateOp(op, `state_ops[${index}]`),
  );
  const pushItems = list(rawPushes, 'push_items', STREAMS_LIMITS.maxCyclePushItems).map((item, index) =>
    parsePushItem(item, producerSub, `push_items[${index}]`, maxPayloadBytes),
  );
  const ack = parseCycleAck(raw.ack);
  return {
    cycleId: cycleIdOf([queryId, partitionId, group, releaseLease, rawOps, rawPushes, raw.ack ?? null]),
    queryId,
    partitionId,
    group,
    releaseLease,
    stateOps,
    pushItems,
    ack,
  };
}

export interface StateRequest {
  queryId: string;
  partitionId: string;
  keys: string[];
  keyPrefix: string | null;
  ripeAtOrBefore: number | null;
}

export function parseStateRequest(body: unknown): StateRequest {
  const raw = requireBody(body);
  const keys =
    raw.keys === undefined || raw.keys === null
      ? []
      : list(raw.keys, 'keys', STREAMS_LIMITS.maxStateKeysPerGet);
  const ripe = raw.ripe_at_or_before;
  if (ripe !== undefined && ripe !== null && (typeof ripe !== 'number' || !Number.isFinite(ripe))) {
    throw invalidRequest('ripe_at_or_before must be a number (epoch ms)');
  }
  const prefix = raw.key_prefix;
  return {
    queryId: name(raw.query_id, 'query_id'),
    partitionId: name(raw.partition_id, 'partition_id'),
    keys: [
      ...new Set(
        keys.map((key, index) => boundedKey(key, `keys[${index}]`, STREAMS_LIMITS.maxStateKeyLength)),
      ),
    ],
    keyPrefix:
      prefix === undefined || prefix === null || prefix === ''
        ? null
        : boundedKey(prefix, 'key_prefix', STREAMS_LIMITS.maxStateKeyLength),
    ripeAtOrBefore: typeof ripe === 'number' ? ripe : null,
  };
}

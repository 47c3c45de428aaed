import type { FastifyInstance } from 'fastify';
import type { BrokerContext } from '../context.js';
import { maintenanceMode, notFound } from '../errors.js';
import { newId } from '../identifiers.js';
import type { StreamsMetrics } from '../streams/metrics.js';
import { parseCycle, parseRegistration, parseStateRequest } from '../streams/parse.js';
import type { StateRow } from '../streams/types.js';
import { READ_ONLY, READ_WRITE } from './access.js';
import { sendJsonText } from './common.js';
import { cycleAckBody, pushResultsBody } from './wire.js';

const unknownQuery = (queryId: string) => notFound(`Unknown query_id '${queryId}': register the query first`);

/** A row passes `ripe_at_or_before` when its value's numeric windowEnd is at or before it (Queen). */
function isRipe(row: StateRow, ripeAtOrBefore: number): boolean {
  const value = JSON.parse(row.value) as unknown;
  if (typeof value !== 'object' || value === null || Array.isArray(value)) return false;
  const windowEnd = (value as Record<string, unknown>).windowEnd;
  return typeof windowEnd === 'number' && Math.trunc(windowEnd) <= ripeAtOrBefore;
}

/**
 * Queen's streams API (/streams/v1/*, docs/broker-streams.md "Streams"): HTTP parsing and mapping;
 * the rules live in the scripts (lua/streams-*.lua, called by streams/redis.ts).
 */
export function registerStreamsRoutes(
  app: FastifyInstance,
  context: BrokerContext,
  metrics: StreamsMetrics,
): void {
  const streams = context.storage.streams;

  app.post('/streams/v1/queries', READ_WRITE, async (request, reply) => {
    const registration = parseRegistration(request.body, newId());
    const outcome = await streams.register(registration);
    if (!outcome.success) {
      return reply.code(409).send({
        success: false,
        ...(outcome.queryId ? { query_id: outcome.queryId } : {}),
        name: registration.name,
        error: outcome.error,
      });
    }
    return {
      success: true,
      query_id: outcome.queryId,
      name: registration.name,
      config_hash: registration.configHash,
      fresh: outcome.fresh,
      reset: outcome.reset,
    };
  });

  app.post('/streams/v1/cycle', READ_WRITE, async (request) => {
    const input = parseCycle(request.body, request.identity?.sub, context.maxPayloadBytes);
    if (input.pushItems.length > 0 && (await context.storage.flags.get()).maintenanceMode)
      throw maintenanceMode();
    // Sink pushes to queues with encryptionEnabled are sealed like any push (docs/broker-encryption.md,
    // "Payload encryption").
    const outcome = await context.encryption.store(input.pushItems, (pushItems) =>
      streams.cycle({ ...input, pushItems }),
    );
    if (!outcome) throw unknownQuery(input.queryId);
    const common = { query_id: input.queryId, partition_id: input.partitionId };
    if (!outcome.success) {
      metrics.cycles.inc({ result: 'rejected' });
      // Queen answers a refused cycle with 200 and success:false; its SDK reads the flag.
      return {
        success: false,
        ...common,
        state_ops_applied: 0,
        push_results: [],
        ack_result: null,
        error: outcome.error,
      };
    }
    metrics.cycles.inc({ result: 'committed' });
    for (const result of outcome.pushResults) {
      if (result.status === 'queued') context.metrics.pushed.inc({ queue: result.queue });
    }
    if (outcome.ackResult && outcome.sourceQueue && input.ack) {
      context.metrics.acked.inc(
        { queue: outcome.sourceQueue, status: input.ack.status },
        outcome.ackResult.count,
      );
    }
    return {
      success: true,
      ...common,
      ...(outcome.sourceQueue ? { queueName: outcome.sourceQueue } : {}),
      state_ops_applied: outcome.stateOpsApplied,
      push_results: pushResultsBody(outcome.pushResults),
      ack_result: cycleAckBody(outcome.ackResult),
    };
  });

  app.post('/streams/v1/state/get', READ_ONLY, async (request, reply) => {
    const query = parseStateRequest(request.body);
    const found = await streams.state(query.queryId, query.partitionId, query.keys);
    if (!found) throw unknownQuery(query.queryId);
    const { keyPrefix, ripeAtOrBefore } = query;
    const rows = found
      .filter((row) => keyPrefix === null || row.key.startsWith(keyPrefix))
      .filter((row) => ripeAtOrBefore === null || isRipe(row, ripeAtOrBefore))
      .sort((a, b) => (a.key < b.key ? -1 : a.key > b.key ? 1 : 0));
    // Values are stored as JSON text: spliced in, not parsed and serialized again.
    const body = rows
      .map(
        (row) =>
          `{"key":${JSON.stringify(row.key)},"value":${row.value},"updated_at":"${new Date(row.updatedAt).toISOString()}"}`,
      )
      .join(',');
    return sendJsonText(reply, 200, `{"success":true,"rows":[${body}]}`);
  });
}

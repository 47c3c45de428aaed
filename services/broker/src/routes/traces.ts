import type { FastifyInstance } from 'fastify';
import type { BrokerContext } from '../context.js';
import { invalidRequest } from '../errors.js';
import { integer, isObject, LIMITS, list, name, optionalString } from '../validation.js';
import { READ_ONLY, READ_WRITE } from './access.js';

/** Message traces: record (201) and read back by message or by trace name. */
export function registerTraceRoutes(app: FastifyInstance, context: BrokerContext): void {
  const { storage } = context;

  app.post('/api/v1/traces', READ_WRITE, async (request, reply) => {
    const body = request.body;
    if (!isObject(body)) throw invalidRequest('body must be a JSON object');
    const names: string[] = [];
    if (body.traceName !== undefined) names.push(name(body.traceName, 'traceName'));
    if (body.traceNames !== undefined) {
      // Each name costs an index entry in storage (the trace itself is stored once).
      const more = list(body.traceNames, 'traceNames', LIMITS.maxTraceNames - names.length);
      for (const [index, each] of more.entries()) names.push(name(each, `traceNames[${index}]`));
    }
    const data = body.data ?? null;
    if (Buffer.byteLength(JSON.stringify(data)) > LIMITS.maxTraceDataBytes) {
      throw invalidRequest(`data exceeds ${LIMITS.maxTraceDataBytes} bytes`);
    }
    const entry = await storage.traces.add({
      partitionId: name(body.partitionId, 'partitionId'),
      transactionId: name(body.transactionId, 'transactionId'),
      traceNames: [...new Set(names)],
      eventType: optionalString(body.eventType, 'eventType') ?? 'info',
      data,
      consumerGroup: optionalString(body.consumerGroup, 'consumerGroup'),
      workerId: optionalString(body.workerId, 'workerId'),
    });
    return reply.code(201).send({ success: true, traceId: entry.id, createdAt: entry.createdAt });
  });

  app.get('/api/v1/traces/names', READ_ONLY, async (request) => {
    const limit = integer((request.query as Record<string, unknown>).limit, 'limit', 100, 1, 1000);
    return { names: await storage.traces.names(limit) };
  });

  app.get<{ Params: { name: string } }>('/api/v1/traces/by-name/:name', READ_ONLY, async (request) => {
    const limit = integer((request.query as Record<string, unknown>).limit, 'limit', 100, 1, 1000);
    const traceName = name(request.params.name, 'name');
    const traces = await storage.traces.byName(traceName, limit);
    return { traceName, traces, total: traces.length };
  });

  app.get<{ Params: { partitionId: string; transactionId: string } }>(
    '/api/v1/traces/:partitionId/:transactionId',
    READ_ONLY,
    async (request) => ({
      traces: await storage.traces.ofMessage(
        name(request.params.partitionId, 'partitionId'),
        name(request.params.transactionId, 'transactionId'),
      ),
    }),
  );
}

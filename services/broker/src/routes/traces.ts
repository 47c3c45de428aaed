import type { FastifyInstance } from 'fastify';
import type { BrokerContext } from '../context.js';
import { invalidRequest } from '../errors.js';
import { integer, isObject, name, optionalString } from '../validation.js';
import { READ_ONLY, READ_WRITE } from './access.js';

/** Message traces: record (201) and read back by message or by trace name. */
export function registerTraceRoutes(app: FastifyInstance, context: BrokerContext): void {
  const { storage } = context;

  app.post('/api/v1/traces', READ_WRITE, async (request, reply) => {
    const body = request.body;
    if (!isObject(body)) throw invalidRequest('body must be a JSON object');
    const names: string[] = [];
    if (body.traceName !== undefined) names.push(name(body.traceName, 'traceName'));
    if (Array.isArray(body.traceNames)) {
      for (const [index, each] of body.traceNames.entries()) names.push(name(each, `traceNames[${index}]`));
    }
    const entry = await storage.addTrace({
      partitionId: name(body.partitionId, 'partitionId'),
      transactionId: name(body.transactionId, 'transactionId'),
      traceNames: names,
      eventType: optionalString(body.eventType, 'eventType') ?? 'info',
      data: body.data ?? null,
      consumerGroup: optionalString(body.consumerGroup, 'consumerGroup'),
      workerId: optionalString(body.workerId, 'workerId'),
    });
    return reply.code(201).send({ success: true, traceId: entry.id, createdAt: entry.createdAt });
  });

  app.get('/api/v1/traces/names', READ_ONLY, async (request) => {
    const limit = integer((request.query as Record<string, unknown>).limit, 'limit', 100, 1, 1000);
    return { names: await storage.traceNames(limit) };
  });

  app.get<{ Params: { name: string } }>('/api/v1/traces/by-name/:name', READ_ONLY, async (request) => {
    const limit = integer((request.query as Record<string, unknown>).limit, 'limit', 100, 1, 1000);
    const traces = await storage.tracesByName(request.params.name, limit);
    return { traceName: request.params.name, traces, total: traces.length };
  });

  app.get<{ Params: { partitionId: string; transactionId: string } }>(
    '/api/v1/traces/:partitionId/:transactionId',
    READ_ONLY,
    async (request) => ({
      traces: await storage.tracesOf(request.params.partitionId, request.params.transactionId),
    }),
  );
}

import type { FastifyInstance } from 'fastify';
import type { BrokerContext } from '../context.js';
import { invalidRequest, notFound } from '../errors.js';
import type { QueueStats } from '../storage.js';
import { integer, isObject, name, optionalName } from '../validation.js';
import { ADMIN, READ_ONLY, READ_WRITE } from './access.js';

async function statsByQueue(context: BrokerContext): Promise<Map<string, QueueStats>> {
  return new Map((await context.storage.cachedStats()).map((stats) => [stats.queue, stats]));
}

/** Read-only views (resources, messages, dead letters) and their admin/read-write deletes. */
export function registerResourceRoutes(app: FastifyInstance, context: BrokerContext): void {
  const { storage } = context;

  app.get('/api/v1/resources/queues', READ_ONLY, async () => {
    const stats = await statsByQueue(context);
    const queues = await storage.listQueues();
    return {
      queues: queues.map((queue) => ({
        name: queue.name,
        namespace: queue.namespace,
        task: queue.task,
        createdAt: queue.createdAt,
        partitions: queue.partitions,
        options: queue.options,
        messages: {
          pending: stats.get(queue.name)?.pending ?? 0,
          retained: stats.get(queue.name)?.retained ?? 0,
          deadLetters: stats.get(queue.name)?.deadLetters ?? 0,
        },
      })),
      total: queues.length,
    };
  });

  app.get<{ Params: { queue: string } }>('/api/v1/resources/queues/:queue', READ_ONLY, async (request) => {
    const queue = await storage.getQueue(request.params.queue);
    if (!queue) throw notFound(`Queue '${request.params.queue}' not found`);
    const stats = (await statsByQueue(context)).get(queue.name);
    return { ...queue, consumerGroups: await storage.groupsOf(queue.name), stats: stats ?? null };
  });

  app.delete<{ Params: { queue: string } }>('/api/v1/resources/queues/:queue', ADMIN, async (request) => {
    if (!(await storage.deleteQueue(request.params.queue))) {
      throw notFound(`Queue '${request.params.queue}' not found`);
    }
    return { deleted: true, queue: request.params.queue };
  });

  app.get('/api/v1/resources/namespaces', READ_ONLY, async () => {
    const counts = new Map<string, number>();
    for (const queue of await storage.listQueues())
      counts.set(queue.namespace, (counts.get(queue.namespace) ?? 0) + 1);
    return { namespaces: [...counts].map(([namespace, queues]) => ({ namespace, queues })) };
  });

  app.get('/api/v1/resources/tasks', READ_ONLY, async () => {
    const counts = new Map<string, { namespace: string; task: string; queues: number }>();
    for (const queue of await storage.listQueues()) {
      if (!queue.task) continue;
      const key = `${queue.namespace}.${queue.task}`;
      const entry = counts.get(key) ?? { namespace: queue.namespace, task: queue.task, queues: 0 };
      entry.queues++;
      counts.set(key, entry);
    }
    return { tasks: [...counts.values()] };
  });

  app.get('/api/v1/resources/overview', READ_ONLY, async () => {
    const queues = await storage.listQueues();
    const stats = [...(await statsByQueue(context)).values()];
    return {
      queues: queues.length,
      partitions: queues.reduce((total, q) => total + q.partitions, 0),
      namespaces: new Set(queues.map((q) => q.namespace)).size,
      messages: {
        pending: stats.reduce((total, s) => total + s.pending, 0),
        retained: stats.reduce((total, s) => total + s.retained, 0),
        pushed: stats.reduce((total, s) => total + s.pushed, 0),
      },
      deadLetters: stats.reduce((total, s) => total + s.deadLetters, 0),
      statsAt: stats.length > 0 ? new Date(Math.min(...stats.map((s) => s.at))).toISOString() : null,
    };
  });

  app.get('/api/v1/messages', READ_ONLY, async (request) => {
    const query = request.query as Record<string, unknown>;
    const limit = integer(query.limit, 'limit', 100, 1, 1000);
    const partition = optionalName(query.partition, 'partition');
    const queues =
      query.queue === undefined
        ? (await storage.listQueues()).map((q) => q.name)
        : [name(query.queue, 'queue')];
    const messages = [];
    for (const queue of queues) {
      if (messages.length >= limit) break;
      messages.push(
        ...(await storage.listMessages({
          queue,
          limit: limit - messages.length,
          ...(partition ? { partition } : {}),
        })),
      );
    }
    return { messages, limit };
  });

  app.get<{ Params: { partitionId: string; transactionId: string } }>(
    '/api/v1/messages/:partitionId/:transactionId',
    READ_ONLY,
    async (request) => {
      const message = await storage.getMessage(request.params.partitionId, request.params.transactionId);
      if (!message) throw notFound('Message not found');
      return message;
    },
  );

  app.delete<{ Params: { partitionId: string; transactionId: string } }>(
    '/api/v1/messages/:partitionId/:transactionId',
    READ_WRITE,
    async (request) => {
      if (!(await storage.deleteMessage(request.params.partitionId, request.params.transactionId))) {
        throw notFound('Message not found');
      }
      return { deleted: true, ...request.params };
    },
  );

  app.get('/api/v1/dlq', READ_ONLY, async (request) => {
    const query = request.query as Record<string, unknown>;
    const limit = integer(query.limit, 'limit', 100, 1, 1000);
    const offset = integer(query.offset, 'offset', 0, 0, 1_000_000);
    const group = optionalName(query.consumerGroup, 'consumerGroup');
    const queues =
      query.queue === undefined
        ? (await storage.listQueues()).map((q) => q.name)
        : [name(query.queue, 'queue')];
    let total = 0;
    const messages = [];
    let skip = offset;
    for (const queue of queues) {
      const page = await storage.listDeadLetters({
        queue,
        limit: limit + skip,
        offset: 0,
        ...(group ? { group } : {}),
      });
      total += page.total;
      const rest = page.messages.slice(skip);
      skip = Math.max(0, skip - page.messages.length);
      messages.push(...rest.slice(0, limit - messages.length));
    }
    return { messages, total, limit, offset };
  });

  /** Requeue dead letters: `{queue, dlqIds:[…]}` or `{queue, all:true}`. */
  app.post('/api/v1/dlq/requeue', READ_WRITE, async (request) => {
    const body = request.body;
    if (!isObject(body)) throw invalidRequest('body must be a JSON object');
    const queue = name(body.queue, 'queue');
    let ids: string[];
    if (body.all === true) {
      const page = await storage.listDeadLetters({ queue, limit: 100_000, offset: 0 });
      ids = page.messages.map((letter) => letter.dlqId);
    } else if (Array.isArray(body.dlqIds) && body.dlqIds.every((id) => typeof id === 'string')) {
      ids = body.dlqIds as string[];
    } else {
      throw invalidRequest('dlqIds (array of strings) or all:true is required');
    }
    return { requeued: await storage.requeueDeadLetters(queue, ids), queue };
  });
}

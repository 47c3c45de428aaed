import type { FastifyInstance } from 'fastify';
import type { BrokerContext } from '../context.js';
import { invalidRequest, notFound } from '../errors.js';
import type { QueueStats } from '../storage.js';
import { integer, isObject, LIMITS, list, name, optionalName } from '../validation.js';
import { ADMIN, READ_ONLY, READ_WRITE } from './access.js';

async function statsByQueue(context: BrokerContext): Promise<Map<string, QueueStats>> {
  return new Map((await context.storage.cachedStats()).map((stats) => [stats.queue, stats]));
}

/** A dead letter's id as both backends write it: a Redis stream id, `<ms>-<sequence>`. */
const DEAD_LETTER_ID = /^\d{1,20}-\d{1,20}$/;

/** `all:true` requeues at most this many pages of `maxDlqIds` letters (100,000). */
const REQUEUE_ALL_PAGES = 10;

/**
 * `all:true`: page by page (each page leaves the DLQ, so the next starts at offset 0), never
 * holding more than one page of letters; a page that requeues nothing ends it, and so does the
 * page bound (consumers may dead-letter again meanwhile).
 */
async function requeueAll(context: BrokerContext, queue: string): Promise<number> {
  let total = 0;
  for (let pages = 0; pages < REQUEUE_ALL_PAGES; pages++) {
    const page = await context.storage.listDeadLetters({ queue, limit: LIMITS.maxDlqIds, offset: 0 });
    if (page.messages.length === 0) return total;
    const requeued = await context.storage.requeueDeadLetters(
      queue,
      page.messages.map((letter) => letter.dlqId),
    );
    if (requeued === 0) return total;
    total += requeued;
  }
  return total;
}

/** Read-only views (resources, messages, dead letters) and their admin/read-write deletes. */
export function registerResourceRoutes(app: FastifyInstance, context: BrokerContext): void {
  const { storage, encryption } = context;

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
    const queueName = name(request.params.queue, 'queue');
    const queue = await storage.getQueue(queueName);
    if (!queue) throw notFound(`Queue '${queueName}' not found`);
    const stats = (await statsByQueue(context)).get(queue.name);
    return { ...queue, consumerGroups: await storage.groupsOf(queue.name), stats: stats ?? null };
  });

  app.delete<{ Params: { queue: string } }>('/api/v1/resources/queues/:queue', ADMIN, async (request) => {
    const queue = name(request.params.queue, 'queue');
    // Its series go even when nothing was stored (a push refused as a whole still counted).
    context.metrics.forgetQueue(queue);
    // Queen's delete_queue_v1: 200 whether or not the queue existed, `existed` says which.
    return { deleted: true, queue, existed: await storage.deleteQueue(queue) };
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
      const page = await storage.listMessages({
        queue,
        limit: limit - messages.length,
        ...(partition ? { partition } : {}),
      });
      messages.push(...page.map((message) => encryption.openView(message)));
    }
    return { messages, limit };
  });

  app.get<{ Params: { partitionId: string; transactionId: string } }>(
    '/api/v1/messages/:partitionId/:transactionId',
    READ_ONLY,
    async (request) => {
      const message = await storage.getMessage(
        name(request.params.partitionId, 'partitionId'),
        name(request.params.transactionId, 'transactionId'),
      );
      if (!message) throw notFound('Message not found');
      return encryption.openView(message);
    },
  );

  app.delete<{ Params: { partitionId: string; transactionId: string } }>(
    '/api/v1/messages/:partitionId/:transactionId',
    READ_WRITE,
    async (request) => {
      const partitionId = name(request.params.partitionId, 'partitionId');
      const transactionId = name(request.params.transactionId, 'transactionId');
      // Queen's delete_message_v1: 200 either way, `success` says whether it was there.
      const success = await storage.deleteMessage(partitionId, transactionId);
      return {
        success,
        partitionId,
        transactionId,
        message: success ? 'Message deleted successfully' : 'Message not found',
      };
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
      messages.push(...rest.slice(0, limit - messages.length).map((letter) => encryption.openView(letter)));
    }
    return { messages, total, limit, offset };
  });

  /** Requeue dead letters: `{queue, dlqIds:[…]}` or `{queue, all:true}`. */
  app.post('/api/v1/dlq/requeue', READ_WRITE, async (request) => {
    const body = request.body;
    if (!isObject(body)) throw invalidRequest('body must be a JSON object');
    const queue = name(body.queue, 'queue');
    if (body.all === true) return { requeued: await requeueAll(context, queue), queue };
    if (body.dlqIds === undefined) throw invalidRequest('dlqIds (array of strings) or all:true is required');
    const ids = list(body.dlqIds, 'dlqIds', LIMITS.maxDlqIds).map((id, index) => {
      if (typeof id !== 'string' || !DEAD_LETTER_ID.test(id)) {
        throw invalidRequest(`dlqIds[${index}] must be a dead-letter id (<ms>-<sequence>)`);
      }
      return id;
    });
    return { requeued: await storage.requeueDeadLetters(queue, ids), queue };
  });
}

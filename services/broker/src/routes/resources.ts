import type { FastifyInstance, FastifyReply } from 'fastify';
import type { BrokerContext } from '../context.js';
import { invalidRequest, notFound } from '../errors.js';
import type { QueueInfo, QueueStats } from '../storage.js';
import { integer, isObject, LIMITS, list, name, optionalName } from '../validation.js';
import { ReadBudget } from '../view-budget.js';
import {
  groupedQueues,
  LIVE_STATS_HEADERS,
  newestFirst,
  queueResource,
  queueSummary,
  statsHeaders,
  systemOverview,
} from '../views.js';
import { ADMIN, READ_ONLY, READ_WRITE } from './access.js';

async function statsByQueue(context: BrokerContext): Promise<Map<string, QueueStats>> {
  return new Map((await context.storage.housekeeping.cachedStats()).map((stats) => [stats.queue, stats]));
}

/** The snapshot's freshness headers (views.ts, statsHeaders) for a view of these queues. */
function withStatsHeaders(
  reply: FastifyReply,
  stats: Map<string, QueueStats>,
  queues: readonly QueueInfo[],
  now: number,
) {
  reply.headers(statsHeaders([...stats.values()], queues, now));
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
    const page = await context.storage.deadLetters.list({ queue, limit: LIMITS.maxDlqIds, offset: 0 });
    if (page.messages.length === 0) return total;
    const requeued = await context.storage.deadLetters.requeue(
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

  // Queen's get_queues_v2: newest queue first.
  app.get('/api/v1/resources/queues', READ_ONLY, async (_request, reply) => {
    const stats = await statsByQueue(context);
    const queues = [...(await storage.catalog.list())].sort(newestFirst);
    withStatsHeaders(reply, stats, queues, context.clock.now());
    return { queues: queues.map((queue) => queueSummary(queue, stats.get(queue.name), true)) };
  });

  app.get<{ Params: { queue: string } }>(
    '/api/v1/resources/queues/:queue',
    READ_ONLY,
    async (request, reply) => {
      const queueName = name(request.params.queue, 'queue');
      const queue = await storage.catalog.get(queueName);
      if (!queue) throw notFound(`Queue '${queueName}' not found`);
      reply.headers(LIVE_STATS_HEADERS);
      return queueResource(queue, await storage.groups.partitions(queue.name));
    },
  );

  app.delete<{ Params: { queue: string } }>('/api/v1/resources/queues/:queue', ADMIN, async (request) => {
    const queue = name(request.params.queue, 'queue');
    // Its series go even when nothing was stored (a push refused as a whole still counted).
    context.metrics.forgetQueue(queue);
    // Queen's delete_queue_v1: 200 whether or not the queue existed, `existed` says which.
    return { deleted: true, queue, existed: await storage.catalog.delete(queue) };
  });

  // Queen's get_namespaces_v2 and get_tasks_v2 (a task is counted across namespaces).
  app.get('/api/v1/resources/namespaces', READ_ONLY, async (_request, reply) => {
    const [queues, stats] = [await storage.catalog.list(), await statsByQueue(context)];
    withStatsHeaders(reply, stats, queues, context.clock.now());
    const entries = groupedQueues(queues, stats, (q) => q.namespace);
    return { namespaces: entries.map(({ key, ...entry }) => ({ namespace: key, ...entry })) };
  });

  app.get('/api/v1/resources/tasks', READ_ONLY, async (_request, reply) => {
    const [queues, stats] = [await storage.catalog.list(), await statsByQueue(context)];
    withStatsHeaders(reply, stats, queues, context.clock.now());
    const entries = groupedQueues(queues, stats, (q) => q.task);
    return { tasks: entries.map(({ key, ...entry }) => ({ task: key, ...entry })) };
  });

  app.get('/api/v1/resources/overview', READ_ONLY, async (_request, reply) => {
    const [queues, stats, now] = [
      await storage.catalog.list(),
      await storage.housekeeping.cachedStats(),
      context.clock.now(),
    ];
    reply.headers(statsHeaders(stats, queues, now));
    return systemOverview(queues, stats, now);
  });

  app.get('/api/v1/messages', READ_ONLY, async (request) => {
    const query = request.query as Record<string, unknown>;
    const limit = integer(query.limit, 'limit', 100, 1, 1000);
    const partition = optionalName(query.partition, 'partition');
    const queues =
      query.queue === undefined
        ? (await storage.catalog.list()).map((q) => q.name)
        : [name(query.queue, 'queue')];
    const messages = [];
    // One budget for the whole view, whatever the number of queues (view-budget.ts).
    const budget = new ReadBudget();
    for (const queue of queues) {
      if (messages.length >= limit || budget.exhausted) break;
      const page = await storage.messages.list({
        queue,
        limit: limit - messages.length,
        budget,
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
      const message = await storage.messages.get(
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
      const success = await storage.messages.delete(partitionId, transactionId);
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
        ? (await storage.catalog.list()).map((q) => q.name)
        : [name(query.queue, 'queue')];
    let total = 0;
    const messages = [];
    let skip = offset;
    // One budget for the whole view: past it, pages are short and totals count what was read.
    const budget = new ReadBudget();
    for (const queue of queues) {
      // The offset runs on across queues: a queue's letters (`total`) before it are skipped.
      const page = await storage.deadLetters.list({
        queue,
        limit: limit - messages.length,
        offset: skip,
        budget,
        ...(group ? { group } : {}),
      });
      total += page.total;
      skip = Math.max(0, skip - page.total);
      messages.push(...page.messages.map((letter) => encryption.openView(letter)));
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
    return { requeued: await storage.deadLetters.requeue(queue, ids), queue };
  });
}

import type { FastifyInstance } from 'fastify';
import type { BrokerContext } from '../context.js';
import { invalidRequest, notFound } from '../errors.js';
import type { Maintenance } from '../maintenance.js';
import type { QueueInfo } from '../storage.js';
import { integer, isObject, LIMITS, name, optionalName, timestamp } from '../validation.js';
import { newestFirst, queueDetail, queueSummary, statsHeaders, systemStatus } from '../views.js';
import { ADMIN, PUBLIC, READ_ONLY } from './access.js';
import { queueMessagesBody } from './wire.js';

const HOUR_MS = 3_600_000;
const DAY_MS = 24 * HOUR_MS;
const ANALYTICS_INTERVALS = new Set(['minute', 'hour', 'day']);

/** `from` and `to` query parameters (ISO times), by default the `span` before now. */
function timeRange(query: Record<string, unknown>, now: number, span: number): { from: number; to: number } {
  const to = query.to === undefined ? now : timestamp(query.to, 'to');
  const from = query.from === undefined ? to - span : timestamp(query.from, 'from');
  if (from > to) throw invalidRequest('from must not be after to');
  return { from, to };
}

/** Queen's `queue`, `namespace` and `task` filters (absent: any). */
function matches(query: Record<string, unknown>, byQueue: boolean): (queue: QueueInfo) => boolean {
  const queue = byQueue ? optionalName(query.queue, 'queue') : undefined;
  const namespace = optionalName(query.namespace, 'namespace');
  const task = optionalName(query.task, 'task');
  return (info) =>
    (queue === undefined || info.name === queue) &&
    (namespace === undefined || info.namespace === namespace) &&
    (task === undefined || info.task === task);
}

/** Status views, the stats refresh and the maintenance toggles (admin), health. */
export function registerStatusRoutes(
  app: FastifyInstance,
  context: BrokerContext,
  maintenance: Maintenance,
): void {
  const { storage } = context;
  const startedAt = Date.now();

  app.get('/health', PUBLIC, async () => ({ status: 'healthy', backend: storage.kind }));

  // Queen's get_status_v3, plus Herald's `backend` and `parkedLongPolls`. `queue`, `namespace`
  // and `task` filter the queue list, as in Queen; the message counts are system-wide.
  app.get('/api/v1/status', READ_ONLY, async (request, reply) => {
    const query = request.query as Record<string, unknown>;
    const now = context.clock.now();
    const range = timeRange(query, now, HOUR_MS);
    const queues = (await storage.catalog.list()).filter(matches(query, true));
    const stats = await storage.housekeeping.cachedStats();
    reply.headers(statsHeaders(stats, queues, now));
    return {
      ...systemStatus(queues, stats, range, now),
      backend: storage.kind,
      uptimeSeconds: Math.round((Date.now() - startedAt) / 1000),
      parkedLongPolls: context.longPoll.parkedCount,
    };
  });

  // Queen's get_status_queues_v2: newest queue first, one page.
  app.get('/api/v1/status/queues', READ_ONLY, async (request, reply) => {
    const query = request.query as Record<string, unknown>;
    const limit = integer(query.limit, 'limit', 100, 1, LIMITS.maxStatusQueues);
    const offset = integer(query.offset, 'offset', 0, 0, LIMITS.maxStatusQueuesOffset);
    const snapshot = await storage.housekeeping.cachedStats();
    const stats = new Map(snapshot.map((s) => [s.queue, s]));
    const queues = (await storage.catalog.list()).filter(matches(query, false)).sort(newestFirst);
    reply.headers(statsHeaders(snapshot, queues, context.clock.now()));
    return {
      queues: queues
        .slice(offset, offset + limit)
        .map((queue) => queueSummary(queue, stats.get(queue.name), false)),
      pagination: { limit, offset },
    };
  });

  // Queen's get_queue_detail_v2.
  app.get<{ Params: { queue: string } }>('/api/v1/status/queues/:queue', READ_ONLY, async (request) => {
    const queueName = name(request.params.queue, 'queue');
    const queue = await storage.catalog.get(queueName);
    if (!queue) throw notFound(`Queue '${queueName}' not found`);
    return queueDetail(queue, await storage.groups.partitions(queue.name));
  });

  // Queen's shape: a bare array, newest first, each message with its queue-mode state.
  app.get<{ Params: { queue: string } }>(
    '/api/v1/status/queues/:queue/messages',
    READ_ONLY,
    async (request) => {
      const query = request.query as Record<string, unknown>;
      const queue = name(request.params.queue, 'queue');
      if (!(await storage.catalog.get(queue))) throw notFound(`Queue '${queue}' not found`);
      const states = await storage.messages.states({
        queue,
        limit: integer(query.limit, 'limit', 50, 1, LIMITS.maxStatusMessages),
        offset: integer(query.offset, 'offset', 0, 0, LIMITS.maxStatusMessagesOffset),
      });
      return queueMessagesBody(states);
    },
  );

  // Queen's get_analytics_v1 answers messages created per time bucket; Herald keeps no such
  // history, so `dataPoints` is empty (docs/broker-queen.md "Differences from Queen").
  app.get('/api/v1/status/analytics', READ_ONLY, async (request) => {
    const query = request.query as Record<string, unknown>;
    const range = timeRange(query, context.clock.now(), DAY_MS);
    const interval = query.interval === undefined ? 'hour' : String(query.interval);
    if (!ANALYTICS_INTERVALS.has(interval)) throw invalidRequest('interval must be minute, hour or day');
    return {
      dataPoints: [],
      interval,
      from: new Date(range.from).toISOString(),
      to: new Date(range.to).toISOString(),
    };
  });

  // Queen's file buffer of pushes taken in maintenance mode: Herald refuses those pushes (503)
  // and has no buffer, so nothing is ever pending. `dbHealthy`: the store answers.
  app.get('/api/v1/status/buffers', READ_ONLY, async () => ({
    pending: 0,
    failed: 0,
    dbHealthy: (await storage.ready()) === undefined,
    worker: 0,
  }));

  app.post('/api/v1/stats/refresh', ADMIN, async () => {
    await maintenance.refreshStats();
    return { success: true, queues: (await storage.housekeeping.cachedStats()).length };
  });

  const readEnabled = (body: unknown): boolean => {
    if (!isObject(body) || typeof body.enabled !== 'boolean')
      throw invalidRequest('enabled (boolean) is required');
    return body.enabled;
  };

  // Herald's own (Queen has no node list): the nodes whose maintenance worker is connected to
  // Redis now, for the console's System and Overview views.
  app.get('/api/v1/system/nodes', ADMIN, async () => ({
    backend: storage.kind,
    nodes: await maintenance.nodes(),
  }));

  app.get('/api/v1/system/maintenance', ADMIN, async () => {
    const flags = await storage.flags.get();
    return {
      maintenanceMode: flags.maintenanceMode,
      popMaintenanceMode: flags.popMaintenanceMode,
      bufferedMessages: 0,
    };
  });
  app.post('/api/v1/system/maintenance', ADMIN, async (request) => {
    const flags = await storage.flags.set({ maintenanceMode: readEnabled(request.body) });
    return {
      maintenanceMode: flags.maintenanceMode,
      bufferedMessages: 0,
      message: flags.maintenanceMode
        ? 'Maintenance mode ENABLED. Pushes are refused with 503 (no file buffer).'
        : 'Maintenance mode DISABLED.',
    };
  });
  app.get('/api/v1/system/maintenance/pop', ADMIN, async () => {
    const flags = await storage.flags.get();
    return { popMaintenanceMode: flags.popMaintenanceMode };
  });
  app.post('/api/v1/system/maintenance/pop', ADMIN, async (request) => {
    const flags = await storage.flags.set({ popMaintenanceMode: readEnabled(request.body) });
    return {
      popMaintenanceMode: flags.popMaintenanceMode,
      message: flags.popMaintenanceMode
        ? 'Pop maintenance mode ENABLED: pops answer 204.'
        : 'Pop maintenance mode DISABLED.',
    };
  });
}

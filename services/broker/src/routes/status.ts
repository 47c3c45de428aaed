import type { FastifyInstance } from 'fastify';
import type { BrokerContext } from '../context.js';
import { invalidRequest, notFound } from '../errors.js';
import type { Maintenance } from '../maintenance.js';
import { integer, isObject, LIMITS, name } from '../validation.js';
import { ADMIN, PUBLIC, READ_ONLY } from './access.js';

/** Status views, the stats refresh and the maintenance toggles (admin), health. */
export function registerStatusRoutes(
  app: FastifyInstance,
  context: BrokerContext,
  maintenance: Maintenance,
): void {
  const { storage } = context;
  const startedAt = Date.now();

  app.get('/health', PUBLIC, async () => ({ status: 'healthy', backend: storage.kind }));

  app.get('/api/v1/status', READ_ONLY, async () => {
    const stats = await storage.cachedStats();
    return {
      status: 'ok',
      backend: storage.kind,
      uptimeSeconds: Math.round((Date.now() - startedAt) / 1000),
      queues: stats.length,
      messages: {
        pending: stats.reduce((t, s) => t + s.pending, 0),
        retained: stats.reduce((t, s) => t + s.retained, 0),
        pushed: stats.reduce((t, s) => t + s.pushed, 0),
      },
      deadLetters: stats.reduce((t, s) => t + s.deadLetters, 0),
      activeLeases: stats.reduce((t, s) => t + s.activeLeases, 0),
      parkedLongPolls: context.longPoll.parkedCount,
      statsAt: stats.length > 0 ? new Date(Math.min(...stats.map((s) => s.at))).toISOString() : null,
    };
  });

  app.get('/api/v1/status/queues', READ_ONLY, async () => ({ queues: await storage.cachedStats() }));

  app.get<{ Params: { queue: string } }>('/api/v1/status/queues/:queue', READ_ONLY, async (request) => {
    const stats = (await storage.cachedStats()).find((s) => s.queue === request.params.queue);
    if (!stats)
      throw notFound(`Queue '${request.params.queue}' not found (or not in the stats snapshot yet)`);
    return stats;
  });

  // Queen's shape: a bare array, newest first, each message with its queue-mode state.
  app.get<{ Params: { queue: string } }>(
    '/api/v1/status/queues/:queue/messages',
    READ_ONLY,
    async (request) => {
      const query = request.query as Record<string, unknown>;
      const queue = name(request.params.queue, 'queue');
      if (!(await storage.getQueue(queue))) throw notFound(`Queue '${queue}' not found`);
      return storage.listQueueMessages({
        queue,
        limit: integer(query.limit, 'limit', 50, 1, LIMITS.maxStatusMessages),
        offset: integer(query.offset, 'offset', 0, 0, LIMITS.maxStatusMessagesOffset),
      });
    },
  );

  app.get('/api/v1/status/analytics', READ_ONLY, async () => {
    const stats = await storage.cachedStats();
    return {
      queues: stats.map((s) => ({
        queue: s.queue,
        pushed: s.pushed,
        pending: s.pending,
        oldestPendingAgeSeconds: s.oldestPendingAgeSeconds,
        leaseExpiries: s.leaseExpiries,
        deadLetters: s.deadLetters,
      })),
    };
  });

  app.post('/api/v1/stats/refresh', ADMIN, async () => {
    await maintenance.refreshStats();
    return { success: true, queues: (await storage.cachedStats()).length };
  });

  const readEnabled = (body: unknown): boolean => {
    if (!isObject(body) || typeof body.enabled !== 'boolean')
      throw invalidRequest('enabled (boolean) is required');
    return body.enabled;
  };

  app.get('/api/v1/system/maintenance', ADMIN, async () => {
    const flags = await storage.flags();
    return {
      maintenanceMode: flags.maintenanceMode,
      popMaintenanceMode: flags.popMaintenanceMode,
      bufferedMessages: 0,
    };
  });
  app.post('/api/v1/system/maintenance', ADMIN, async (request) => {
    const flags = await storage.setFlags({ maintenanceMode: readEnabled(request.body) });
    return {
      maintenanceMode: flags.maintenanceMode,
      bufferedMessages: 0,
      message: flags.maintenanceMode
        ? 'Maintenance mode ENABLED. Pushes are refused with 503 (no file buffer).'
        : 'Maintenance mode DISABLED.',
    };
  });
  app.get('/api/v1/system/maintenance/pop', ADMIN, async () => {
    const flags = await storage.flags();
    return { popMaintenanceMode: flags.popMaintenanceMode };
  });
  app.post('/api/v1/system/maintenance/pop', ADMIN, async (request) => {
    const flags = await storage.setFlags({ popMaintenanceMode: readEnabled(request.body) });
    return {
      popMaintenanceMode: flags.popMaintenanceMode,
      message: flags.popMaintenanceMode
        ? 'Pop maintenance mode ENABLED: pops answer 204.'
        : 'Pop maintenance mode DISABLED.',
    };
  });
}

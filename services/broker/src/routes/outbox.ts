import type { FastifyInstance } from 'fastify';
import type { BrokerContext } from '../context.js';
import { READ_ONLY } from './access.js';

/** Queues one status answer covers: the bridged ones and those listed for the relays. */
const MAX_OUTBOXES = 1000;

/**
 * `GET /api/v1/outbox` (docs/broker-outbox.md, "Watching the relay"): each outbox that is
 * bridged or listed for the relays, with its waiting intents, the age of the oldest and the
 * intents the hub refused for good. Herald's extension; the console's System view reads it.
 */
export function registerOutboxRoutes(app: FastifyInstance, context: BrokerContext): void {
  app.get('/api/v1/outbox', READ_ONLY, async () => {
    const { outbox } = context.storage;
    const [bridged, listed] = await Promise.all([
      outbox.bridged(),
      outbox.due(Number.MAX_SAFE_INTEGER, MAX_OUTBOXES),
    ]);
    const queues = [...new Set([...bridged, ...listed.map(({ queue }) => queue)])]
      .sort()
      .slice(0, MAX_OUTBOXES);
    const now = context.clock.now();
    const statuses = await outbox.status(queues);
    return {
      relaying: context.hubConfigured,
      outboxes: statuses.map((status) => ({
        ...status,
        oldestAt: status.oldestAt === null ? null : new Date(status.oldestAt).toISOString(),
        lagSeconds: status.oldestAt === null ? 0 : Math.max(0, now - status.oldestAt) / 1000,
      })),
    };
  });
}

import type { FastifyInstance } from 'fastify';
import type { BrokerContext } from '../context.js';
import { invalidRequest, notFound } from '../errors.js';
import type { SeekTarget } from '../storage.js';
import { integer, isObject, name, timestamp } from '../validation.js';
import { ADMIN, READ_ONLY, READ_WRITE } from './access.js';

interface GroupView {
  name: string;
  queues: { queue: string; resolved: number; lag: number }[];
  totalLag: number;
}

async function groups(context: BrokerContext): Promise<Map<string, GroupView>> {
  const stats = new Map((await context.storage.cachedStats()).map((s) => [s.queue, s]));
  const views = new Map<string, GroupView>();
  for (const queue of await context.storage.listQueues()) {
    for (const group of await context.storage.groupsOf(queue.name)) {
      const view = views.get(group) ?? { name: group, queues: [], totalLag: 0 };
      const entry = stats.get(queue.name)?.groups.find((g) => g.group === group);
      view.queues.push({ queue: queue.name, resolved: entry?.resolved ?? 0, lag: entry?.lag ?? 0 });
      view.totalLag += entry?.lag ?? 0;
      views.set(group, view);
    }
  }
  return views;
}

function parseSeek(body: unknown): SeekTarget {
  if (!isObject(body)) throw invalidRequest('body must be a JSON object');
  if (body.toEnd === true) return { toEnd: true };
  if (body.timestamp !== undefined) return { timestamp: timestamp(body.timestamp, 'timestamp') };
  throw invalidRequest('toEnd:true or timestamp is required');
}

/** Kept short so each registration, with its access level, stays on one line. */
type GroupRoute = { Params: { group: string } };

/** Consumer groups: listing, lag, deletion, subscription changes and seek (replay/skip). */
export function registerConsumerGroupRoutes(app: FastifyInstance, context: BrokerContext): void {
  const { storage } = context;

  app.get('/api/v1/consumer-groups', READ_ONLY, async () => ({
    consumerGroups: [...(await groups(context)).values()],
  }));

  app.get('/api/v1/consumer-groups/lagging', READ_ONLY, async (request) => {
    const minLag = integer(
      (request.query as Record<string, unknown>).minLag,
      'minLag',
      1,
      0,
      Number.MAX_SAFE_INTEGER,
    );
    return { consumerGroups: [...(await groups(context)).values()].filter((g) => g.totalLag >= minLag) };
  });

  app.get<{ Params: { group: string } }>('/api/v1/consumer-groups/:group', READ_ONLY, async (request) => {
    const view = (await groups(context)).get(request.params.group);
    if (!view) throw notFound(`Consumer group '${request.params.group}' not found`);
    return view;
  });

  // Queen's delete_consumer_group_v1 / delete_consumer_group_for_queue_v1: 200 whether or not
  // the group existed. `deletedPartitions` counts the partitions of each queue the group was on
  // (a Herald group's position covers every partition of its queue). Herald keeps a group's
  // subscription with its state, so both go whatever `deleteMetadata` says.
  app.delete<{ Params: { group: string } }>('/api/v1/consumer-groups/:group', ADMIN, async (request) => {
    const group = name(request.params.group, 'group');
    let deletedPartitions = 0;
    for (const queue of await storage.listQueues()) {
      if (await storage.deleteGroup(queue.name, group)) deletedPartitions += queue.partitions;
    }
    return { success: true, consumerGroup: group, deletedPartitions, metadataDeleted: true };
  });

  app.delete<{ Params: { group: string; queue: string } }>(
    '/api/v1/consumer-groups/:group/queues/:queue',
    ADMIN,
    async (request) => {
      const group = name(request.params.group, 'group');
      const queue = name(request.params.queue, 'queue');
      const partitions = (await storage.getQueue(queue))?.partitions ?? 0;
      const deletedPartitions = (await storage.deleteGroup(queue, group)) ? partitions : 0;
      return {
        success: true,
        consumerGroup: group,
        queueName: queue,
        deletedPartitions,
        metadataDeleted: true,
      };
    },
  );

  /** `{queue?, subscriptionMode: all|new, subscriptionFrom?}`: re-positions the group. */
  app.post<GroupRoute>('/api/v1/consumer-groups/:group/subscription', READ_WRITE, async (request) => {
    const body = request.body;
    if (!isObject(body)) throw invalidRequest('body must be a JSON object');
    let target: SeekTarget;
    if (body.subscriptionFrom !== undefined)
      target = { timestamp: timestamp(body.subscriptionFrom, 'subscriptionFrom') };
    else if (body.subscriptionMode === 'new') target = { toEnd: true };
    else if (body.subscriptionMode === 'all') target = { timestamp: 0 };
    else throw invalidRequest('subscriptionMode (all|new) or subscriptionFrom is required');
    const group = name(request.params.group, 'group');
    const queues =
      body.queue === undefined
        ? (await storage.listQueues()).map((q) => q.name)
        : [name(body.queue, 'queue')];
    let partitions = 0;
    for (const queue of queues) {
      if (body.queue === undefined && !(await storage.groupsOf(queue)).includes(group)) continue;
      partitions += await storage.seek(queue, group, undefined, target);
    }
    return { success: true, consumerGroup: group, partitions };
  });

  app.post<{ Params: { group: string; queue: string } }>(
    '/api/v1/consumer-groups/:group/queues/:queue/seek',
    READ_WRITE,
    async (request) => {
      const group = name(request.params.group, 'group');
      const queue = name(request.params.queue, 'queue');
      const target = parseSeek(request.body);
      if (!(await storage.getQueue(queue))) throw notFound(`Queue '${queue}' not found`);
      const partitions = await storage.seek(queue, group, undefined, target);
      return { success: true, consumerGroup: group, queue, partitions };
    },
  );

  app.post<{ Params: { group: string; queue: string; partition: string } }>(
    '/api/v1/consumer-groups/:group/queues/:queue/partitions/:partition/seek',
    READ_WRITE,
    async (request) => {
      const group = name(request.params.group, 'group');
      const queue = name(request.params.queue, 'queue');
      const partition = name(request.params.partition, 'partition');
      const partitions = await storage.seek(queue, group, partition, parseSeek(request.body));
      if (partitions === 0) throw notFound(`Partition '${partition}' of queue '${queue}' not found`);
      return { success: true, consumerGroup: group, queue, partition };
    },
  );
}

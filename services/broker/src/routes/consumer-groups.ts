import type { FastifyInstance } from 'fastify';
import type { BrokerContext } from '../context.js';
import { invalidRequest, notFound } from '../errors.js';
import { lagFromPartitions, lagOfGroup } from '../lag.js';
import { QUEUE_MODE, type QueueInfo, type SeekTarget } from '../storage.js';
import { integer, isObject, name, timestamp } from '../validation.js';
import { consumerGroupEntry, groupPartitions, laggingPartitions, statsHeaders } from '../views.js';
import { ADMIN, READ_ONLY, READ_WRITE } from './access.js';

/** Every (group, queue) pair, in Queen's order: by group, then queue. */
async function memberships(context: BrokerContext): Promise<{ group: string; queue: QueueInfo }[]> {
  const pairs: { group: string; queue: QueueInfo }[] = [];
  for (const queue of await context.storage.catalog.list()) {
    for (const group of await context.storage.groups.list(queue.name)) pairs.push({ group, queue });
  }
  return pairs.sort((a, b) => compare(a.group, b.group) || compare(a.queue.name, b.queue.name));
}

const compare = (a: string, b: string) => (a < b ? -1 : a > b ? 1 : 0);

function parseSeek(body: unknown): SeekTarget {
  if (!isObject(body)) throw invalidRequest('body must be a JSON object');
  if (body.toEnd === true) return { toEnd: true };
  if (body.timestamp !== undefined) return { timestamp: timestamp(body.timestamp, 'timestamp') };
  throw invalidRequest("Must specify either 'toEnd': true or 'timestamp'");
}

/** Kept short so each registration, with its access level, stays on one line. */
type GroupRoute = { Params: { group: string } };

/** Consumer groups: listing, lag, deletion, subscription changes and seek (replay/skip). */
export function registerConsumerGroupRoutes(app: FastifyInstance, context: BrokerContext): void {
  const { storage } = context;

  // Queen's get_consumer_groups_v4: a bare array, one entry per (group, queue).
  app.get('/api/v1/consumer-groups', READ_ONLY, async (_request, reply) => {
    const snapshot = await storage.housekeeping.cachedStats();
    const stats = new Map(snapshot.map((s) => [s.queue, s]));
    const now = context.clock.now();
    const entries = await memberships(context);
    reply.headers(statsHeaders(snapshot, [...new Set(entries.map(({ queue }) => queue))], now));
    return entries.map(({ group, queue }) =>
      consumerGroupEntry(
        group,
        queue,
        stats.get(queue.name)?.groups.find((g) => g.group === group),
        now,
      ),
    );
  });

  // Queen's get_lagging_partitions_v1: partitions whose oldest unresolved message is older than
  // `minLagSeconds` (default one hour), most lagging first. Only queues where the stats snapshot
  // shows some group with a backlog are read partition by partition.
  app.get('/api/v1/consumer-groups/lagging', READ_ONLY, async (request) => {
    const query = request.query as Record<string, unknown>;
    const minLagSeconds = integer(query.minLagSeconds, 'minLagSeconds', 3600, 0, Number.MAX_SAFE_INTEGER);
    const now = context.clock.now();
    const lagging = [];
    for (const stats of await storage.housekeeping.cachedStats()) {
      if (!stats.groups.some((g) => g.lag > 0)) continue;
      lagging.push(
        ...laggingPartitions(stats.queue, await storage.groups.partitions(stats.queue), minLagSeconds, now),
      );
    }
    return lagging.sort((a, b) => b.time_lag_seconds - a.time_lag_seconds);
  });

  // Herald's lag of one group (docs/broker-autoscaling.md): the shape KEDA's metrics-api scaler
  // reads. Queue mode when no group is named; a queue or group that does not exist is a 404.
  app.get('/api/v1/lag', READ_ONLY, async (request) => {
    const query = request.query as Record<string, unknown>;
    const queue = name(query.queue, 'queue');
    const group = query.group === undefined ? QUEUE_MODE : name(query.group, 'group');
    if (!(await storage.catalog.get(queue))) throw notFound(`Queue '${queue}' not found`);
    if (group !== QUEUE_MODE && !(await storage.groups.list(queue)).includes(group)) {
      throw notFound(`Consumer group '${group}' not found on queue '${queue}'`);
    }
    const stats = (await storage.housekeeping.cachedStats()).find((entry) => entry.queue === queue);
    const known = stats?.groups.find((entry) => entry.group === group);
    if (stats && known) return lagOfGroup(stats, known);
    return lagFromPartitions(queue, group, await storage.groups.partitions(queue), context.clock.now());
  });

  // Queen's get_consumer_group_details_v1: `{<queue>: {partitions: [...]}}`, `{}` for a group
  // that exists nowhere.
  app.get<GroupRoute>('/api/v1/consumer-groups/:group', READ_ONLY, async (request) => {
    const group = name(request.params.group, 'group');
    const now = context.clock.now();
    const details: Record<string, { partitions: ReturnType<typeof groupPartitions> }> = {};
    for (const { queue } of (await memberships(context)).filter((pair) => pair.group === group)) {
      details[queue.name] = {
        partitions: groupPartitions(group, await storage.groups.partitions(queue.name), now),
      };
    }
    return details;
  });

  // Queen's delete_consumer_group_v1 / delete_consumer_group_for_queue_v1: 200 whether or not
  // the group existed. `deletedPartitions` counts the partitions of each queue the group was on
  // (a Herald group's position covers every partition of its queue). Herald keeps a group's
  // subscription with its state, so both go whatever `deleteMetadata` says.
  app.delete<{ Params: { group: string } }>('/api/v1/consumer-groups/:group', ADMIN, async (request) => {
    const group = name(request.params.group, 'group');
    let deletedPartitions = 0;
    for (const queue of await storage.catalog.list()) {
      if (await storage.groups.delete(queue.name, group)) deletedPartitions += queue.partitions;
    }
    return { success: true, consumerGroup: group, deletedPartitions, metadataDeleted: true };
  });

  app.delete<{ Params: { group: string; queue: string } }>(
    '/api/v1/consumer-groups/:group/queues/:queue',
    ADMIN,
    async (request) => {
      const group = name(request.params.group, 'group');
      const queue = name(request.params.queue, 'queue');
      const partitions = (await storage.catalog.get(queue))?.partitions ?? 0;
      const deletedPartitions = (await storage.groups.delete(queue, group)) ? partitions : 0;
      return {
        success: true,
        consumerGroup: group,
        queueName: queue,
        deletedPartitions,
        metadataDeleted: true,
      };
    },
  );

  /**
   * Queen's `{subscriptionTimestamp}` (update_consumer_group_subscription_v1), or Herald's
   * `{queue?, subscriptionMode: all|new, subscriptionFrom?}`: re-positions the group on every
   * queue it reads (or on `queue`) at that time.
   */
  app.post<GroupRoute>('/api/v1/consumer-groups/:group/subscription', READ_WRITE, async (request) => {
    const body = request.body;
    if (!isObject(body)) throw invalidRequest('body must be a JSON object');
    let target: SeekTarget;
    if (body.subscriptionTimestamp !== undefined)
      target = { timestamp: timestamp(body.subscriptionTimestamp, 'subscriptionTimestamp') };
    else if (body.subscriptionFrom !== undefined)
      target = { timestamp: timestamp(body.subscriptionFrom, 'subscriptionFrom') };
    else if (body.subscriptionMode === 'new') target = { toEnd: true };
    else if (body.subscriptionMode === 'all') target = { timestamp: 0 };
    else throw invalidRequest('Missing subscriptionTimestamp in request body (or subscriptionMode all|new)');
    const group = name(request.params.group, 'group');
    const queues =
      body.queue === undefined
        ? (await storage.catalog.list()).map((q) => q.name)
        : [name(body.queue, 'queue')];
    let rowsUpdated = 0;
    for (const queue of queues) {
      if (body.queue === undefined && !(await storage.groups.list(queue)).includes(group)) continue;
      if ((await storage.groups.seek(queue, group, undefined, target)) > 0) rowsUpdated++;
    }
    return {
      success: true,
      consumerGroup: group,
      newTimestamp:
        typeof body.subscriptionTimestamp === 'string'
          ? body.subscriptionTimestamp
          : 'timestamp' in target
            ? new Date(target.timestamp).toISOString()
            : null,
      rowsUpdated,
    };
  });

  // Queen's seek_consumer_group_v1: 200 with `partitionsUpdated` 0 for a queue that does not exist.
  app.post<{ Params: { group: string; queue: string } }>(
    '/api/v1/consumer-groups/:group/queues/:queue/seek',
    READ_WRITE,
    async (request) => {
      const group = name(request.params.group, 'group');
      const queue = name(request.params.queue, 'queue');
      const target = parseSeek(request.body);
      const partitionsUpdated = (await storage.catalog.get(queue))
        ? await storage.groups.seek(queue, group, undefined, target)
        : 0;
      return {
        success: true,
        consumerGroup: group,
        queueName: queue,
        seekToEnd: 'toEnd' in target,
        targetTimestamp: 'timestamp' in target ? new Date(target.timestamp).toISOString() : null,
        partitionsUpdated,
      };
    },
  );

  // Queen's seek_partition_v1 moves one partition to its end and reads no body; Herald also
  // takes `{timestamp}`. An unknown partition is a 404 (Queen: 500 `Partition not found`).
  app.post<{ Params: { group: string; queue: string; partition: string } }>(
    '/api/v1/consumer-groups/:group/queues/:queue/partitions/:partition/seek',
    READ_WRITE,
    async (request) => {
      const group = name(request.params.group, 'group');
      const queue = name(request.params.queue, 'queue');
      const partition = name(request.params.partition, 'partition');
      const body = request.body;
      const target: SeekTarget =
        body === undefined || (isObject(body) && Object.keys(body).length === 0)
          ? { toEnd: true }
          : parseSeek(body);
      if ((await storage.groups.seek(queue, group, partition, target)) === 0) {
        throw notFound(`Partition not found: '${partition}' of queue '${queue}'`);
      }
      return {
        success: true,
        consumerGroup: group,
        queueName: queue,
        partitionName: partition,
        updated: true,
        // Where a seek to the end landed is not read back (it would cost a partition scan).
        cursorMovedTo: 'toEnd' in target ? null : new Date(target.timestamp).toISOString(),
      };
    },
  );
}

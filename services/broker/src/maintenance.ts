import { createRedis, isConnectionError, loggableError, parseRedisOptions, type Redis } from '@herald/redis';
import { type Job, Queue, Worker } from 'bullmq';
import type { FastifyBaseLogger } from 'fastify';
import { closeRedis, settleWithin } from './close.js';
import type { BrokerMetrics } from './metrics.js';
import { applyRetention } from './retention.js';
import type { BrokerStorage } from './storage.js';

export interface MaintenanceIntervals {
  readonly leaseSweepMs: number;
  readonly retentionMs: number;
  readonly statsMs: number;
}

export interface Maintenance {
  /** Runs the stats job now (POST /api/v1/stats/refresh). */
  refreshStats(): Promise<void>;
  close(): Promise<void>;
}

const JOBS = ['lease-sweep', 'retention', 'stats'] as const;
type JobName = (typeof JOBS)[number];

function runner(storage: BrokerStorage, metrics: BrokerMetrics): Record<JobName, () => Promise<unknown>> {
  return {
    // Lease expiry is also applied lazily by pop; the sweep makes expired leases count as an
    // attempt (and dead-letter) even when nobody pops, and wakes parked pops on every node.
    'lease-sweep': async () => {
      const sweep = await storage.sweepLeases();
      for (const { queue, count } of sweep.expired) metrics.leaseExpiries.inc({ queue }, count);
      return sweep;
    },
    retention: () => applyRetention(storage),
    stats: () => storage.refreshStats(),
  };
}

/**
 * With Redis: BullMQ job schedulers (repeatable jobs), so whatever the node count exactly one
 * worker runs each job at a time. The BullMQ prefix carries a hash tag (Cluster-ready) and
 * the connections given to BullMQ are closed here on shutdown.
 */
export async function startRedisMaintenance(options: {
  storage: BrokerStorage;
  metrics: BrokerMetrics;
  redisUrl: string;
  keyPrefix: string;
  intervals: MaintenanceIntervals;
  log: FastifyBaseLogger;
}): Promise<Maintenance> {
  const { storage, metrics, intervals, log } = options;
  const prefix = `{${options.keyPrefix}bull}`;
  const connections: Redis[] = [];
  const connect = (name: string) => {
    const redis = createRedis(parseRedisOptions(options.redisUrl, { connectionName: name }));
    redis.on('error', () => undefined);
    connections.push(redis);
    return redis;
  };
  const queue = new Queue('broker-maintenance', { connection: connect('herald-broker-bull-queue'), prefix });
  const jobs = runner(storage, metrics);
  const worker = new Worker('broker-maintenance', async (job: Job) => jobs[job.name as JobName]?.(), {
    connection: connect('herald-broker-bull-worker'),
    prefix,
    concurrency: 3,
  });
  // Connection errors repeat on every reconnect attempt of every BullMQ connection: the storage
  // logs the outage once (OutageLog). Without listeners BullMQ would print them to stderr.
  worker.on('failed', (job, error) => {
    if (!isConnectionError(error)) log.warn({ err: error, job: job?.name }, 'maintenance job failed');
  });
  worker.on('error', (error) => {
    if (!isConnectionError(error)) log.warn({ err: loggableError(error) }, 'maintenance worker error');
  });
  queue.on('error', (error) => {
    if (!isConnectionError(error)) log.warn({ err: loggableError(error) }, 'maintenance queue error');
  });
  const every: Record<JobName, number> = {
    'lease-sweep': intervals.leaseSweepMs,
    retention: intervals.retentionMs,
    stats: intervals.statsMs,
  };
  for (const name of JOBS) {
    await queue.upsertJobScheduler(
      name,
      { every: every[name] },
      { name, opts: { removeOnComplete: true, removeOnFail: 50 } },
    );
  }
  return {
    async refreshStats() {
      await storage.refreshStats();
    },
    async close() {
      // Redis down: do not wait for a running job (it waits on Redis too) and bound every
      // step; BullMQ's own connections (the worker's blocking duplicate) are cut after.
      const connected = connections.every((connection) => connection.status === 'ready');
      await settleWithin(worker.close(!connected));
      await settleWithin(queue.close());
      await Promise.all([
        settleWithin(worker.disconnect()),
        settleWithin(queue.disconnect()),
        ...connections.map((connection) => closeRedis(connection)),
      ]);
    },
  };
}

/** The in-process backend has one node: plain timers. */
export function startMemoryMaintenance(options: {
  storage: BrokerStorage;
  metrics: BrokerMetrics;
  intervals: MaintenanceIntervals;
  log: FastifyBaseLogger;
}): Maintenance {
  const jobs = runner(options.storage, options.metrics);
  const timers = [
    setInterval(
      () => void jobs['lease-sweep']().catch((err) => options.log.warn({ err }, 'maintenance job failed')),
      options.intervals.leaseSweepMs,
    ),
    setInterval(
      () => void jobs.retention().catch((err) => options.log.warn({ err }, 'maintenance job failed')),
      options.intervals.retentionMs,
    ),
    setInterval(
      () => void jobs.stats().catch((err) => options.log.warn({ err }, 'maintenance job failed')),
      options.intervals.statsMs,
    ),
  ];
  for (const timer of timers) timer.unref();
  return {
    async refreshStats() {
      await options.storage.refreshStats();
    },
    async close() {
      for (const timer of timers) clearInterval(timer);
    },
  };
}

import { randomBytes } from 'node:crypto';
import { createRequire } from 'node:module';
import { hostname } from 'node:os';
import {
  asRedisUnavailable,
  closeRedis,
  createRedis,
  isConnectionError,
  loggableError,
  type RedisClient,
  type RedisTopology,
  replyWithin,
  settleWithin,
} from '@herald/redis';
import type { Queue as BullQueue, Worker as BullWorker, Job } from 'bullmq';
import type { FastifyBaseLogger } from 'fastify';
import type { BrokerMetrics } from './metrics.js';
import type { Housekeeping } from './storage.js';

// The two classes the jobs use, not BullMQ's index: the index also loads its PostgreSQL backend,
// flows and queue events (246 modules against 176; an idle broker on Node 26 ~3.5 MB lower RSS,
// docs/benchmarks.md "Broker footprint"). test/broker/startup-footprint.test.ts keeps it so.
const load = createRequire(import.meta.url);
const { Queue } = load('bullmq/dist/cjs/classes/queue.js') as { Queue: typeof BullQueue };
const { Worker } = load('bullmq/dist/cjs/classes/worker.js') as { Worker: typeof BullWorker };

export interface MaintenanceIntervals {
  readonly leaseSweepMs: number;
  readonly retentionMs: number;
  readonly statsMs: number;
}

export interface Maintenance {
  /** Runs the stats job now (POST /api/v1/stats/refresh). */
  refreshStats(): Promise<void>;
  /** A readiness check: undefined while maintenance runs, else why it does not. */
  readiness(): Promise<string | undefined>;
  /** The broker nodes connected now (GET /api/v1/system/nodes, the console's node list). */
  nodes(): Promise<NodeInfo[]>;
  close(): Promise<void>;
}

/**
 * One broker node as Redis sees it: each node's maintenance worker holds a connection whose
 * client name carries the node's name (BullMQ's `Queue.getWorkers`, from `CLIENT LIST`).
 */
export interface NodeInfo {
  readonly name: string;
  /** The node's address as Redis sees it (`ip:port` of that connection); absent in-process. */
  readonly address?: string;
  /** Seconds since that connection was opened (the node's uptime, within a reconnect). */
  readonly connectedSeconds?: number;
  /** Whether this is the node that answered. */
  readonly self: boolean;
}

/** This process's node name: host, process id and a random tag (several nodes may share a process). */
export function nodeName(): string {
  return `${hostname()}:${process.pid}:${randomBytes(3).toString('hex')}`;
}

const JOBS = ['lease-sweep', 'retention', 'stats'] as const;
type JobName = (typeof JOBS)[number];

/**
 * How often each node checks that the job schedulers exist and recreates missing ones: Redis
 * may come back empty (restart without persistence, FLUSHALL, failover to an empty replica),
 * and then no job would ever run again (issue #9, defect 6). The same check restarts a job
 * whose chain of runs broke (see `revive`).
 */
export const SCHEDULER_CHECK_MS = 5000;
/**
 * How long a worker's hold on a running job lasts unless renewed (BullMQ renews it at half
 * that while the job runs). A job taken by a node that then lost the reply, its connection or
 * its life keeps this hold, not BullMQ's 30 s default: the check revives it once it lapsed.
 */
export const JOB_LOCK_MS = 10_000;
/**
 * BullMQ's pause before it retries a worker step that failed for lack of a connection (its
 * default is 15 s): after an outage, a job taken just before it runs within this of Redis
 * being back, not 15 s or 30 s late (a CI run saw 30 s).
 */
const RUN_RETRY_MS = 1000;
/** A job that has not run for this many of its intervals (plus the grace) fails readiness. */
export const STALE_INTERVALS = 3;
/** Slack on top of that, for a busy worker and clock differences between nodes. */
export const STALE_GRACE_MS = 2000;
/** Bound on the Redis round trip of the readiness check (Redis away: commands are queued). */
const CHECK_REPLY_MS = 1000;

function runner(housekeeping: Housekeeping, metrics: BrokerMetrics): Record<JobName, () => Promise<unknown>> {
  return {
    // Lease expiry is also applied lazily by pop; the sweep makes expired leases count as an
    // attempt (and dead-letter) even when nobody pops, and wakes parked pops on every node.
    'lease-sweep': async () => {
      const sweep = await housekeeping.sweepLeases();
      for (const { queue, count } of sweep.expired) metrics.leaseExpiries.inc({ queue }, count);
      return sweep;
    },
    retention: () => housekeeping.applyRetention(),
    stats: () => housekeeping.refreshStats(),
  };
}

/**
 * Runs each job in this process every `every[name]` ms (a run still going is not started
 * again); `ran` hears of each run that went through. Returns the stop.
 */
function runOnTimers(
  jobs: Record<JobName, () => Promise<unknown>>,
  every: Record<JobName, number>,
  log: FastifyBaseLogger,
  ran: (name: JobName) => void = () => undefined,
): () => void {
  const running = new Set<JobName>();
  const timers = JOBS.map((name) =>
    setInterval(() => {
      if (running.has(name)) return;
      running.add(name);
      jobs[name]()
        .then(() => ran(name))
        .catch((error) => log.warn({ error: loggableError(error), job: name }, 'maintenance job failed'))
        .finally(() => running.delete(name));
    }, every[name]),
  );
  for (const timer of timers) timer.unref();
  return () => {
    for (const timer of timers) clearInterval(timer);
  };
}

/**
 * BullMQ's complaints about jobs whose keys vanished with an outage (a Redis that came back
 * empty, a lock that expired while it was away): the next scheduled run does the work.
 */
/** Redis's refusals for lack of rights (ACL): NOPERM, or no (valid) authentication. */
const ACL_REFUSAL = /^(NOPERM|NOAUTH|WRONGPASS)\b/;

const BULL_AFTER_OUTAGE = /Missing key for job|Missing lock for job|could not renew lock/i;

/**
 * With Redis: BullMQ job schedulers (repeatable jobs), so whatever the node count exactly one
 * worker runs each job at a time. The BullMQ prefix carries a hash tag (Cluster-ready) and
 * the connections given to BullMQ are closed here on shutdown.
 *
 * Nothing here waits for Redis: the node listens (not ready) while Redis is away at boot, and
 * the schedulers are created when it is reachable, again on every reconnect and every
 * SCHEDULER_CHECK_MS when they are missing. Each job run stamps a heartbeat hash; a job whose
 * stamp is older than STALE_INTERVALS of its interval (+ STALE_GRACE_MS) fails readiness.
 */
export function startRedisMaintenance(options: {
  housekeeping: Housekeeping;
  /** This node's name, given to its worker so the node list can show it (defaults to nodeName()). */
  nodeName?: string;
  metrics: BrokerMetrics;
  /** BullMQ connects with the node's topology: a Cluster client on Cluster (its prefix is hash-tagged). */
  topology: RedisTopology;
  keyPrefix: string;
  intervals: MaintenanceIntervals;
  log: FastifyBaseLogger;
  /** Tests shorten these: SCHEDULER_CHECK_MS and JOB_LOCK_MS. */
  checkMs?: number;
  lockMs?: number;
  /**
   * BullMQ's stalled check period (default: lockMs). A test of this file's own rescheduling
   * lengthens it, so that BullMQ's check cannot send the job back first.
   */
  stalledMs?: number;
}): Maintenance {
  const { housekeeping, metrics, intervals, log } = options;
  const lockMs = options.lockMs ?? JOB_LOCK_MS;
  const selfName = options.nodeName ?? nodeName();
  const prefix = `{${options.keyPrefix}bull}`;
  const heartbeatKey = `${prefix}:herald-maintenance-heartbeat`;
  const connections: RedisClient[] = [];
  // BullMQ reports every reconnect attempt of each of its connections (a stack trace each,
  // ~100 per outage); the storage logs an outage once, when lost and when back (OutageLog), so
  // connection errors are not logged here.
  const connect = (name: string) => {
    const redis = createRedis({ topology: options.topology, connectionName: name });
    redis.on('error', () => undefined);
    connections.push(redis);
    return redis;
  };
  const queueConnection = connect('herald-broker-bull-queue');
  // The readiness check reads the stamps on a connection of its own: BullMQ's commands (Lua
  // scripts, which Redis treats as writes) and the stamps held back by Redis (writes paused, a
  // stalled primary) would otherwise queue the read behind them, hiding which jobs are late.
  const checkConnection = connect('herald-broker-maintenance-check');
  const queue = new Queue('broker-maintenance', { connection: queueConnection, prefix });
  const jobs = runner(housekeeping, metrics);
  const worker = new Worker(
    'broker-maintenance',
    async (job: Job) => {
      const name = job.name as JobName;
      try {
        return await jobs[name]?.();
      } finally {
        // Ran (a failure is logged below and is the data's problem, not the scheduling's).
        await queueConnection.hset(heartbeatKey, name, String(Date.now()));
      }
    },
    {
      connection: connect('herald-broker-bull-worker'),
      prefix,
      concurrency: 3,
      name: selfName,
      lockDuration: lockMs,
      stalledInterval: options.stalledMs ?? lockMs,
      runRetryDelay: RUN_RETRY_MS,
    },
  );
  // What an outage leaves behind is not news: the outage itself is logged once (OutageLog).
  const outageEcho = (error: Error) => isConnectionError(error) || BULL_AFTER_OUTAGE.test(error.message);
  const onError = (source: string) => (error: Error) => {
    if (redisFull(error)) return;
    if (outageEcho(error))
      log.debug({ error: loggableError(error) }, `maintenance ${source}: after an outage`);
    else log.warn({ error: loggableError(error) }, `maintenance ${source} error`);
  };
  worker.on('failed', (job, error) => {
    if (!outageEcho(error) && !redisFull(error))
      log.warn({ error: loggableError(error), job: job?.name }, 'maintenance job failed');
  });
  // A refusal by Redis's ACL (the user lacks a command or key) is no outage and does not pass:
  // BullMQ's worker retries it without pause, a busy loop that starves the node and floods the
  // log. The worker is paused, once, with one warning; the scheduler check (every
  // SCHEDULER_CHECK_MS) resumes it when Redis accepts the commands again. Readiness reports it.
  let refusedByAcl = false;
  let closed = false;
  const logWorkerError = onError('worker');
  worker.on('error', (error) => {
    if (!ACL_REFUSAL.test(error.message)) return logWorkerError(error);
    if (refusedByAcl || closed) return;
    refusedByAcl = true;
    log.warn(
      { error: loggableError(error) },
      'maintenance paused: Redis refuses its commands (ACL); check the permissions of the Redis user',
    );
    void worker.pause(true).catch(() => undefined);
  });
  // Without a listener BullMQ prints a queue's connection errors to stderr (Redis outages).
  queue.on('error', onError('queue'));

  const every: Record<JobName, number> = {
    'lease-sweep': intervals.leaseSweepMs,
    retention: intervals.retentionMs,
    stats: intervals.statsMs,
  };
  /**
   * Redis full (used memory above maxmemory): BullMQ's scripts add data, so no worker can take a
   * job, no job runs, and every node would turn not ready after STALE_INTERVALS, while consumers
   * and retention are what free Redis (docs/broker-operations.md, "Redis full"). From the first
   * refusal this node runs the jobs itself on their intervals (their scripts run on a full
   * Redis: lua/includes/drain-when-full.lua), until Redis has refused nothing for `quietMs`
   * (the staleness readiness allows the longest job) or a worker here completed a job. The jobs
   * are idempotent sweeps: nodes running them at once only repeat work.
   */
  const quietMs = STALE_INTERVALS * Math.max(...Object.values(every)) + STALE_GRACE_MS;
  let fullAt = 0;
  let stopLocal: (() => void) | undefined;
  /** When each job last went through on this node's own timers. */
  const ranLocally = new Map<JobName, number>();
  const leaveFull = (why: string) => {
    if (!stopLocal) return;
    stopLocal();
    stopLocal = undefined;
    log.info(`maintenance: ${why}; jobs run through BullMQ again`);
  };
  function redisFull(error: Error): boolean {
    // Redis's refusal of a write that adds data while it is full (maxmemory, noeviction).
    if (asRedisUnavailable(error)?.reason !== 'full') return false;
    fullAt = Date.now();
    if (!stopLocal && !closed) {
      log.warn(
        { error: loggableError(error) },
        'maintenance: Redis is full (maxmemory) and BullMQ cannot take jobs: this node runs them until Redis accepts writes',
      );
      stopLocal = runOnTimers(jobs, every, log, (name) => {
        ranLocally.set(name, Date.now());
        if (Date.now() - fullAt > quietMs) leaveFull('Redis refused no write lately');
      });
    }
    return true;
  }
  worker.on('completed', () => leaveFull('Redis accepts writes again'));
  /** Why the last scheduler check failed; undefined once it succeeded. */
  let establishProblem: string | undefined = 'job schedulers not created yet';
  let establishing: Promise<void> | undefined;
  const schedule = (name: JobName) =>
    queue.upsertJobScheduler(
      name,
      { every: every[name] },
      { name, opts: { removeOnComplete: true, removeOnFail: 50 } },
    );
  /**
   * Whether a scheduler's chain of runs is broken. BullMQ schedules a job's next run only when a
   * worker has taken the job, in a second step: a node that lost the reply, its connection or
   * its life between the two leaves the taken job active and no next run, until BullMQ's
   * stalled check sends the job back (and, on its second stall, fails it for good: never). The
   * chain holds while the scheduler's next job waits (delayed, waiting) or runs under a live
   * hold (JOB_LOCK_MS, renewed while it runs).
   */
  const broken = async (next: number | null | undefined, name: JobName): Promise<boolean> => {
    if (next === null || next === undefined) return true;
    const id = `repeat:${name}:${next}`;
    const state = await queue.getJobState(id);
    if (state === 'delayed' || state === 'waiting' || state === 'prioritized') return false;
    if (state === 'active') return (await queueConnection.exists(`${queue.toKey(id)}:lock`)) === 0;
    return true;
  };
  /**
   * Creates the schedulers that are missing and restarts those whose chain broke (upserting a
   * sound one would move its next run). Any node may do it, several at once: an upsert replaces
   * the scheduler's pending next job, and every job is an idempotent sweep.
   */
  const establish = (): Promise<void> => {
    establishing ??= (async () => {
      try {
        const missing: JobName[] = [];
        const revived: JobName[] = [];
        for (const name of JOBS) {
          const scheduler = await queue.getJobScheduler(name);
          if (!scheduler) missing.push(name);
          else if (await broken(scheduler.next, name)) revived.push(name);
        }
        for (const name of [...missing, ...revived]) await schedule(name);
        if (missing.length > 0 && establishProblem === undefined) {
          log.warn({ jobs: missing }, 'maintenance: job schedulers were missing (Redis emptied?): recreated');
        }
        if (revived.length > 0) {
          log.info(
            { jobs: revived },
            'maintenance: jobs left without a next run (a node lost Redis): rescheduled',
          );
        }
        establishProblem = undefined;
        if (refusedByAcl && !closed) {
          refusedByAcl = false;
          worker.resume();
          log.info('maintenance resumed: Redis accepts its commands again');
        }
      } catch (error) {
        // Redis full: the jobs run on this node's timers meanwhile.
        if (redisFull(error as Error)) {
          establishProblem = undefined;
          return;
        }
        establishProblem = `cannot create job schedulers: ${(error as Error).message}`;
        if (!isConnectionError(error) && !closed) {
          log.warn({ error: loggableError(error) }, 'maintenance: cannot create job schedulers');
        }
      } finally {
        establishing = undefined;
      }
    })();
    return establishing;
  };
  void establish();
  queueConnection.on('ready', () => void establish());
  const checkTimer = setInterval(() => void establish(), options.checkMs ?? SCHEDULER_CHECK_MS);
  checkTimer.unref();

  /** Since when this node has seen no stamp of a job (a fresh Redis, or a fresh deployment). */
  const unstampedSince = new Map<JobName, number>();
  return {
    async refreshStats() {
      await housekeeping.refreshStats();
    },
    async readiness() {
      if (establishProblem) return establishProblem;
      const stamps = await replyWithin(
        checkConnection.hmget(heartbeatKey, ...JOBS),
        CHECK_REPLY_MS,
        'heartbeat',
      );
      const now = Date.now();
      const stale = new Map<JobName, number>();
      JOBS.forEach((name, index) => {
        const stamp = stamps[index];
        if (stamp) unstampedSince.delete(name);
        else if (!unstampedSince.has(name)) unstampedSince.set(name, now);
        const stamped = stamp ? Number(stamp) : (unstampedSince.get(name) ?? now);
        const last = Math.max(stamped, ranLocally.get(name) ?? 0);
        if (now - last > STALE_INTERVALS * every[name] + STALE_GRACE_MS) stale.set(name, now - last);
      });
      if (stale.size === 0) return undefined;
      // A long run (retention on a large backlog) stamps only when it ends: running is not stuck.
      // Unknown (no reply): the stamps alone decide.
      const active = await replyWithin(queue.getJobs(['active']), CHECK_REPLY_MS, 'active jobs').catch(
        () => [],
      );
      for (const job of active) stale.delete(job.name as JobName);
      if (stale.size === 0) return undefined;
      const late = [...stale].map(([name, ms]) => `${name} (${Math.round(ms / 1000)} s)`);
      return `jobs not run lately: ${late.join(', ')}`;
    },
    async nodes() {
      const workers = await replyWithin(queue.getWorkers(), CHECK_REPLY_MS, 'client list');
      const marker = ':w:';
      return workers
        .map((worker) => {
          // BullMQ puts the queue's name in `name` and the client's own in `rawname`.
          const rawName = worker.rawname ?? '';
          const at = rawName.indexOf(marker);
          const name = at >= 0 ? rawName.slice(at + marker.length) : rawName;
          const age = Number(worker.age);
          return {
            name,
            ...(worker.addr ? { address: worker.addr } : {}),
            ...(Number.isFinite(age) ? { connectedSeconds: age } : {}),
            self: name === selfName,
          };
        })
        .sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
    },
    async close() {
      closed = true;
      clearInterval(checkTimer);
      stopLocal?.();
      // A forced close: a running job is not waited for. Waiting could last forever (on Cluster
      // after a failover a job was seen never to settle, and the worker's lock-renewal timer then
      // kept the process alive after shutdown); every job is an idempotent sweep, and one cut
      // short runs again (its lock expires, another node's worker takes it). Every step is
      // bounded; BullMQ's own connections (the worker's blocking duplicate) are cut after.
      await settleWithin(worker.close(true));
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
  housekeeping: Housekeeping;
  nodeName?: string;
  metrics: BrokerMetrics;
  intervals: MaintenanceIntervals;
  log: FastifyBaseLogger;
}): Maintenance {
  const jobs = runner(options.housekeeping, options.metrics);
  const selfName = options.nodeName ?? nodeName();
  const every: Record<JobName, number> = {
    'lease-sweep': options.intervals.leaseSweepMs,
    retention: options.intervals.retentionMs,
    stats: options.intervals.statsMs,
  };
  const stop = runOnTimers(jobs, every, options.log);
  return {
    async refreshStats() {
      await options.housekeeping.refreshStats();
    },
    // Timers in this process: they run as long as it does.
    async readiness() {
      return undefined;
    },
    // One node: this process.
    async nodes() {
      return [{ name: selfName, self: true }];
    },
    async close() {
      stop();
    },
  };
}

/*
 * A maintenance job taken by a worker that then lost Redis's reply runs again soon. BullMQ
 * schedules a job's next run only once the worker has the job in hand: the lost reply leaves the
 * job active, held by nobody, and no next run. Before the fix the lease sweep stopped until
 * BullMQ's stalled check sent the job back, 30 to 60 s later (a held lock of 30 s, a check every
 * 30 s), and for good if that job had stalled once before.
 */
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { closeRedis, createRedis, redisTopologyFromEnv } from '@herald/redis';
import { RedisServer, ReplyLossProxy, uniquePrefix, waitFor } from '@herald/testkit';
import type { FastifyBaseLogger } from 'fastify';
import { type Maintenance, startRedisMaintenance } from '../src/maintenance.js';
import type { BrokerMetrics } from '../src/metrics.js';
import type { Housekeeping } from '../src/storage.js';

/** The hold on a taken job and the check's period, shortened (production: 10 s and 5 s). */
const LOCK_MS = 1000;
const CHECK_MS = 250;
/**
 * BullMQ's stalled check, lengthened past the test: with it every LOCK_MS (as in production) it
 * raced the check under test for the lapsed job and, on a loaded machine, sometimes won (the job
 * ran again, unlogged: the assertion below failed).
 */
const STALLED_MS = 120_000;

let sweeps = 0;
const housekeeping: Housekeeping = {
  sweepLeases: async () => {
    sweeps += 1;
    return { expired: [] };
  },
  applyRetention: async () => 0,
  refreshStats: async () => [],
  cachedStats: async () => [],
};

const infos: string[] = [];
const quiet = () => undefined;
const log = {
  level: 'info',
  fatal: quiet,
  error: quiet,
  warn: quiet,
  info: (_: unknown, message: string) => infos.push(message),
  debug: quiet,
  trace: quiet,
  silent: quiet,
  child: () => log,
} as unknown as FastifyBaseLogger;

let server: RedisServer;
let proxy: ReplyLossProxy;
let maintenance: Maintenance;
const prefix = uniquePrefix('revive');
before(async () => {
  server = await RedisServer.start();
  proxy = await ReplyLossProxy.start({ port: server.port });
  const topology = redisTopologyFromEnv({ REDIS_URL: proxy.url });
  assert.ok(topology);
  maintenance = startRedisMaintenance({
    housekeeping,
    metrics: {} as BrokerMetrics,
    topology,
    keyPrefix: prefix,
    intervals: { leaseSweepMs: 100, retentionMs: 600_000, statsMs: 600_000 },
    log,
    checkMs: CHECK_MS,
    lockMs: LOCK_MS,
    stalledMs: STALLED_MS,
  });
});
after(async () => {
  await maintenance.close();
  await proxy.close();
  await server.destroy();
});

/** BullMQ's moveToActive: EVALSHA with its 11 keys, the queue's wait then active list first. */
const takesAJob = (request: readonly string[]) =>
  request[0] === 'evalsha' &&
  request[2] === '11' &&
  Boolean(request[3]?.endsWith(':broker-maintenance:wait')) &&
  Boolean(request[4]?.endsWith(':broker-maintenance:active'));

test('a job whose taking reply was lost leaves no gap longer than the hold on it', async () => {
  await waitFor(() => sweeps >= 3, { what: 'the lease sweep running' });
  const direct = redisTopologyFromEnv({ REDIS_URL: server.url });
  assert.ok(direct);
  const redis = createRedis({ topology: direct });
  try {
    const active = `{${prefix}bull}:broker-maintenance:active`;
    // A reply lost while no job was due took nothing: lose another until one left a job behind.
    let orphan: string | undefined;
    for (let attempt = 0; attempt < 20 && !orphan; attempt++) {
      // Resolved once Redis ran it: the job it took, if any, is in the active list now.
      await proxy.loseNextReply(takesAJob);
      orphan = (await redis.lrange(active, 0, -1)).find((id) => id.startsWith('repeat:lease-sweep:'));
    }
    assert.ok(orphan, 'a lost reply left a taken lease-sweep job behind');
    const sweepsAtLoss = sweeps;
    // Rescheduled once the hold lapsed (LOCK_MS) and the check saw it: well within 10 s, while
    // BullMQ alone waits for its stalled check (30 s by default; STALLED_MS here).
    await waitFor(() => sweeps > sweepsAtLoss + 2, {
      timeoutMs: 10_000,
      what: 'the lease sweep running again',
    });
    assert.ok(
      infos.some((message) => /without a next run/.test(message)),
      `the rescheduling is logged: ${JSON.stringify(infos)}`,
    );
  } finally {
    await closeRedis(redis);
  }
});

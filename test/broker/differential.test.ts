/*
 * The embedded engine behaves like Redis under the broker's whole workload (issue #11, and
 * #23 since the rules exist once): seeded random sequences of operations at the storage
 * interface (push with dedup, pop with and without groups in each subscription mode, acks of
 * every status with and without leases, lease expiry on a fake clock, extend, release, seek,
 * configure with every option, retention, requeue, deletes, transactions) run on the broker's
 * storage over the embedded engine (the default without Redis) and over a real Redis side by
 * side: same code, same scripts, so every answer and what each shows after it must be equal,
 * ids the storage generates mapped by first appearance. The recorded regressions
 * (differential-regressions.ts) were drifts between the former TypeScript copy of the rules and
 * the scripts; they keep running as sequences that exercise corners of the rules.
 *
 * A failing seed prints its difference and a shrunk sequence that replays it.
 *   DIFF_SEEDS=200          more seeds (default SEEDS below)
 *   DIFF_FIRST_SEED=1000    where the seeds start (default 1)
 *   DIFF_SEED=42            one seed
 *   DIFF_OPS=400            operations per seed (default OPERATIONS below)
 *   DIFF_REPLAY='[...]'     a printed sequence (or a file holding it), instead of seeds
 */
import assert from 'node:assert/strict';
import { existsSync, readFileSync } from 'node:fs';
import { after, before, test } from 'node:test';
import { loadBrokerScripts } from '@herald/broker';
import {
  createRedis,
  KeyClock,
  type RedisClient,
  type RedisTopology,
  redisTopologyFromEnv,
  type ScriptSet,
} from '@herald/redis';
import { stopTestRedis, testRedisEnvironment, testTopology } from '@herald/testkit';
import { generate, type Operation, QUEUES } from './differential-model.js';
import { REGRESSIONS } from './differential-regressions.js';
import { CLOCK_START, describe, type PairContext, runPair, shrink } from './differential-run.js';

const SEEDS = 40;
const OPERATIONS = 150;

function integer(name: string, fallback: number): number {
  const raw = process.env[name];
  if (raw === undefined || raw === '') return fallback;
  const value = Number(raw);
  if (!Number.isSafeInteger(value) || value < 0)
    throw new Error(`${name} must be a whole number, got ${raw}`);
  return value;
}

const operationCount = integer('DIFF_OPS', OPERATIONS);
const single = process.env.DIFF_SEED;
const firstSeed = integer('DIFF_FIRST_SEED', 1);
const seeds =
  single !== undefined && single !== ''
    ? [integer('DIFF_SEED', 0)]
    : Array.from({ length: integer('DIFF_SEEDS', SEEDS) }, (_, index) => firstSeed + index);
const replayText = process.env.DIFF_REPLAY;

// HERALD_TEST_TOPOLOGY picks the Redis (standalone by default). On Redis Cluster a transaction
// may only span queues of one slot: there the two queues share a namespace and the storage groups
// slots by namespace (docs/broker-topologies.md, "Redis topologies").
const onCluster = testTopology() === 'cluster';
const queues = onCluster ? ['orders', 'orders.Zeta'] : QUEUES;
const slotGroup = onCluster ? 'namespace' : 'queue';
let topology: RedisTopology;
let redis: RedisClient;
// The broker's scripts on the key clock (shared/redis README.md, "One clock"): their time is
// the KeyClock's, written to a key per queue base; the text is production's otherwise.
const scripts: ScriptSet = loadBrokerScripts({ clock: 'key' });

before(async () => {
  const found = redisTopologyFromEnv(await testRedisEnvironment());
  if (!found) throw new Error('no Redis topology for the differential test');
  topology = found;
  redis = createRedis({ topology, connectionName: 'differential-clock' });
});
after(async () => {
  redis.disconnect();
  await stopTestRedis();
});

async function check(label: number | 'replay', operations: Operation[], context: PairContext): Promise<void> {
  const mismatch = await runPair(operations, context);
  if (!mismatch) return;
  const shrunk = await shrink(operations, mismatch, context);
  assert.fail(describe(label, shrunk));
}

/** Date is left alone: both storages read the KeyClock, the scripts its keys. */
function contextFor(): PairContext {
  const clock = new KeyClock(CLOCK_START, redis);
  return { topology, scripts, clock, queues, slotGroup };
}

if (replayText !== undefined && replayText !== '') {
  test('a replayed sequence gives the same answers on both backends', async () => {
    const text = existsSync(replayText) ? readFileSync(replayText, 'utf8') : replayText;
    await check('replay', JSON.parse(text) as Operation[], contextFor());
  });
} else {
  for (const regression of REGRESSIONS) {
    test(`regression (${regression.found}): ${regression.name}`, async () => {
      await check('replay', regression.operations, contextFor());
    });
  }
  for (const seed of seeds) {
    test(`seed ${seed}: ${operationCount} operations give the same answers on both backends`, async () => {
      await check(seed, generate(seed, operationCount), contextFor());
    });
  }
}

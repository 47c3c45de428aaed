/*
 * The broker soak (test/soak/broker-soak-run.ts, docs/reliability.md) in a short run: every
 * fault once (kill -9 of a node, kill -9 of Redis, SIGTERM of a node, a Redis outage with its
 * probe) and replies lost between the nodes and Redis, so the resent-script paths run too.
 * The refusal time bound is checked by the long runs only (no timing thresholds in tests);
 * every count that must be zero is asserted here.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { brokerSoakFailures, formatBrokerTable, runBrokerSoak } from './broker-soak-run.js';

test('broker soak, short: nothing lost, duplicated unexplained, reordered or applied after a 503', {
  timeout: 170_000,
}, async () => {
  const result = await runBrokerSoak({
    messages: 3000,
    partitions: 8,
    producers: 4,
    consumers: 4,
    leaseTime: 3,
    outageMs: 3000,
    faults: ['node-kill', 'redis-kill', 'node-sigterm', 'redis-outage'],
    replyLossEveryMs: 300,
  });
  const table = formatBrokerTable(result);
  assert.deepEqual(brokerSoakFailures(result, { latency: false }), [], table);
  assert.equal(result.faults.length, 4, table);
  // The faults were felt: replies were lost, and the outage probe was refused.
  assert.ok(result.repliesLost > 0, table);
  const [outage] = result.outages;
  assert.ok(outage && outage.refusedPushes > 0 && outage.probes > 0, table);
});

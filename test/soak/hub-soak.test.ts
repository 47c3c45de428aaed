/*
 * The hub soak (test/soak/hub-soak-run.ts, docs/reliability.md) in a short run: kill -9 of each
 * node and two kill -9 of Redis while publishers with their own ids retry and subscribers resume
 * with Last-Event-ID, and publish replies lost between the nodes and Redis.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { formatHubTable, hubSoakFailures, runHubSoak } from './hub-soak-run.js';

test('hub soak, short: no subscriber misses, repeats or reorders an update', {
  timeout: 170_000,
}, async () => {
  const result = await runHubSoak({
    updates: 2000,
    topics: 4,
    subscribers: 10,
    faults: ['node-kill', 'redis-kill', 'node-kill', 'redis-kill'],
    replyLossEveryMs: 300,
  });
  const table = formatHubTable(result);
  assert.deepEqual(hubSoakFailures(result), [], table);
  assert.equal(result.faults.length, 4, table);
  // The faults were felt: replies were lost, and subscribers of the killed nodes resumed.
  assert.ok(result.repliesLost > 0, table);
  assert.ok(result.totals.resumes > 0, table);
});

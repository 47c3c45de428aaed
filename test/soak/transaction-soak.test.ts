/*
 * The transaction soak (test/soak/transaction-soak-run.ts, docs/broker-outbox.md, "Transactions
 * across slots") in a short run: transactions across the three shards of a 3-primary Cluster with
 * one replica each, in both operation orders, while a broker node, a Cluster primary and the other
 * broker node are killed with kill -9. Every count that must be zero is asserted, and each fault
 * must have happened.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import {
  formatTransactionTable,
  runTransactionSoak,
  transactionSoakFailures,
} from './transaction-soak-run.js';

test('transaction soak, short: every committed transaction whole, no refused one applied, nothing left held', {
  timeout: 170_000,
}, async () => {
  const result = await runTransactionSoak({
    messages: 600,
    partitions: 16,
    workersPerNode: 4,
    leaseTime: 3,
    faults: ['node-kill', 'primary-kill', 'node-kill'],
    stallMs: 60_000,
    settleMs: 30_000,
  });
  const table = formatTransactionTable(result);
  assert.deepEqual(transactionSoakFailures(result), [], `${table}\n${result.logs}`);
  // Each fault happened, on each broker node and on a primary that a replica replaced.
  assert.equal(result.faults.length, 3, table);
  assert.match(result.faults[0] ?? '', /^kill -9 broker-a /, table);
  assert.match(result.faults[1] ?? '', /^kill -9 primary \d+ of .* \(replica \d+ took over/, table);
  assert.match(result.faults[2] ?? '', /^kill -9 broker-b /, table);
});

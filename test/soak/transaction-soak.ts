/*
 * The transaction soak as a script (test/soak/transaction-soak-run.ts):
 *   node --import tsx test/soak/transaction-soak.ts --messages 10000
 * Options: --messages (at most 11,000), --partitions, --workers (per broker node), --lease-time (s),
 * --faults a,b,c (of node-kill, primary-kill; default node-kill,primary-kill,node-kill),
 * --orders (of push-first, ack-first; default both, alternating), --min-replicas-ack (default 1),
 * --rejoin-after-ms (how long a killed primary stays down after the failover; default 5000),
 * --replica-ack-timeout-ms (BROKER_MIN_REPLICAS_ACK_TIMEOUT, default 1000), --log-level (of the
 * broker nodes, default warn; their log tails are printed on a failure or with another level).
 * Prints the table; exits 1 on any transaction answered committed but not whole, refused but
 * applied, a lost or duplicated sink message, or room or a share left held.
 */
import { parseArgs } from 'node:util';
import { integerOption, listOption } from './options.js';
import {
  formatTransactionTable,
  OPERATION_ORDERS,
  type OperationOrder,
  runTransactionSoak,
  TRANSACTION_FAULTS,
  TRANSACTION_SOAK_DEFAULTS,
  type TransactionFault,
  transactionSoakFailures,
} from './transaction-soak-run.js';

// Ctrl-C or a timeout: exit through process.exit so the Redis and node children are killed.
for (const signal of ['SIGINT', 'SIGTERM'] as const) process.once(signal, () => process.exit(130));

const { values } = parseArgs({
  options: {
    messages: { type: 'string' },
    partitions: { type: 'string' },
    workers: { type: 'string' },
    'lease-time': { type: 'string' },
    faults: { type: 'string' },
    orders: { type: 'string' },
    'min-replicas-ack': { type: 'string' },
    'rejoin-after-ms': { type: 'string' },
    'replica-ack-timeout-ms': { type: 'string' },
    'log-level': { type: 'string' },
  },
});
const defaults = TRANSACTION_SOAK_DEFAULTS;
const result = await runTransactionSoak({
  messages: integerOption(values.messages, 'messages', defaults.messages),
  partitions: integerOption(values.partitions, 'partitions', defaults.partitions),
  workersPerNode: integerOption(values.workers, 'workers', defaults.workersPerNode),
  leaseTime: integerOption(values['lease-time'], 'lease-time', defaults.leaseTime),
  faults: listOption<TransactionFault>(values.faults, 'faults', TRANSACTION_FAULTS, defaults.faults),
  orders: listOption<OperationOrder>(values.orders, 'orders', OPERATION_ORDERS, defaults.orders),
  minReplicasAck: integerOption(values['min-replicas-ack'], 'min-replicas-ack', defaults.minReplicasAck),
  rejoinAfterMs: integerOption(values['rejoin-after-ms'], 'rejoin-after-ms', defaults.rejoinAfterMs),
  replicaAckTimeoutMs: integerOption(
    values['replica-ack-timeout-ms'],
    'replica-ack-timeout-ms',
    defaults.replicaAckTimeoutMs,
  ),
  logLevel: values['log-level'] ?? defaults.logLevel,
  log: (line) => console.error(`[${new Date().toISOString()}] ${line}`),
});
console.log(formatTransactionTable(result));
const failures = transactionSoakFailures(result);
for (const failure of failures) console.log(`FAIL ${failure}`);
console.log(result.logs);
console.log(failures.length === 0 ? 'PASS' : 'FAILED');
process.exit(failures.length === 0 ? 0 : 1);

/*
 * The broker soak as a script (docs/reliability.md):
 *   node --import tsx test/soak/broker-soak.ts --messages 1000000
 * Options: --messages, --partitions, --producers, --consumers, --lease-time (s),
 * --outage-ms, --reply-loss-every-ms (0: no reply-loss proxy), --faults a,b,c (of
 * node-kill, redis-kill, node-sigterm, redis-outage; default: each at least twice).
 * Prints the table; exits 1 on any lost message, unexplained duplicate, FIFO violation,
 * refused-but-applied request or late 503.
 */
import { parseArgs } from 'node:util';
import {
  BROKER_FAULTS,
  BROKER_SOAK_DEFAULTS,
  type BrokerFault,
  brokerSoakFailures,
  formatBrokerTable,
  runBrokerSoak,
} from './broker-soak-run.js';
import { integerOption, listOption } from './options.js';

// Ctrl-C or a timeout: exit through process.exit so the Redis and node children are killed.
for (const signal of ['SIGINT', 'SIGTERM'] as const) process.once(signal, () => process.exit(130));

const { values } = parseArgs({
  options: {
    messages: { type: 'string' },
    partitions: { type: 'string' },
    producers: { type: 'string' },
    consumers: { type: 'string' },
    'lease-time': { type: 'string' },
    'outage-ms': { type: 'string' },
    'reply-loss-every-ms': { type: 'string' },
    faults: { type: 'string' },
  },
});
const defaults = BROKER_SOAK_DEFAULTS;
const result = await runBrokerSoak({
  messages: integerOption(values.messages, 'messages', defaults.messages),
  partitions: integerOption(values.partitions, 'partitions', defaults.partitions),
  producers: integerOption(values.producers, 'producers', defaults.producers),
  consumers: integerOption(values.consumers, 'consumers', defaults.consumers),
  leaseTime: integerOption(values['lease-time'], 'lease-time', defaults.leaseTime),
  outageMs: integerOption(values['outage-ms'], 'outage-ms', defaults.outageMs),
  replyLossEveryMs: integerOption(
    values['reply-loss-every-ms'],
    'reply-loss-every-ms',
    defaults.replyLossEveryMs,
  ),
  faults: listOption<BrokerFault>(values.faults, 'faults', BROKER_FAULTS, defaults.faults),
  log: (line) => console.error(`[${new Date().toISOString()}] ${line}`),
});
console.log(formatBrokerTable(result));
const failures = brokerSoakFailures(result);
for (const failure of failures) console.log(`FAIL ${failure}`);
console.log(failures.length === 0 ? 'PASS' : 'FAILED');
process.exit(failures.length === 0 ? 0 : 1);

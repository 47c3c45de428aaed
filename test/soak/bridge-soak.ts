/*
 * The bridge soak as a script (issue #25; test/soak/bridge-soak-run.ts):
 *   node --import tsx test/soak/bridge-soak.ts --messages 100000
 * Options: --messages, --partitions, --producers, --push-rate (messages/s over all producers,
 * 0: unthrottled), --reply-loss-every-ms (0: no reply-loss proxy), --drain-timeout-ms,
 * --faults a,b,c (of broker-kill, hub-kill, redis-kill; default: each twice).
 * Prints the table; exits 1 on any message missing or duplicated in the hub, an update out of its
 * partition's order, or an update the resumed subscriber missed.
 */
import { parseArgs } from 'node:util';
import {
  BRIDGE_FAULTS,
  BRIDGE_SOAK_DEFAULTS,
  type BridgeFault,
  bridgeSoakFailures,
  formatBridgeTable,
  runBridgeSoak,
} from './bridge-soak-run.js';
import { integerOption, listOption } from './options.js';

// Ctrl-C or a timeout: exit through process.exit so the Redis and node children are killed.
for (const signal of ['SIGINT', 'SIGTERM'] as const) process.once(signal, () => process.exit(130));

const { values } = parseArgs({
  options: {
    messages: { type: 'string' },
    partitions: { type: 'string' },
    producers: { type: 'string' },
    'push-rate': { type: 'string' },
    'reply-loss-every-ms': { type: 'string' },
    'drain-timeout-ms': { type: 'string' },
    faults: { type: 'string' },
  },
});
const defaults = BRIDGE_SOAK_DEFAULTS;
const result = await runBridgeSoak({
  messages: integerOption(values.messages, 'messages', defaults.messages),
  partitions: integerOption(values.partitions, 'partitions', defaults.partitions),
  producers: integerOption(values.producers, 'producers', defaults.producers),
  pushRate: integerOption(values['push-rate'], 'push-rate', defaults.pushRate),
  replyLossEveryMs: integerOption(
    values['reply-loss-every-ms'],
    'reply-loss-every-ms',
    defaults.replyLossEveryMs,
  ),
  drainTimeoutMs: integerOption(values['drain-timeout-ms'], 'drain-timeout-ms', defaults.drainTimeoutMs),
  faults: listOption<BridgeFault>(values.faults, 'faults', BRIDGE_FAULTS, defaults.faults),
  log: (line) => console.error(`[${new Date().toISOString()}] ${line}`),
});
console.log(formatBridgeTable(result));
const failures = bridgeSoakFailures(result);
for (const failure of failures) console.log(`FAIL ${failure}`);
console.log(failures.length === 0 ? 'PASS' : 'FAILED');
process.exit(failures.length === 0 ? 0 : 1);

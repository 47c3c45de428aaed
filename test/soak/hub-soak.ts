/*
 * The hub soak as a script (docs/reliability.md):
 *   node --import tsx test/soak/hub-soak.ts --updates 100000
 * Options: --updates, --topics, --subscribers, --reply-loss-every-ms (0: no reply-loss proxy),
 * --faults a,b (of node-kill, redis-kill; default: each twice).
 * Prints one line per subscriber and the totals; exits 1 on any missed, duplicate or
 * out-of-order update.
 */
import { parseArgs } from 'node:util';
import {
  formatHubTable,
  HUB_FAULTS,
  HUB_SOAK_DEFAULTS,
  type HubFault,
  hubSoakFailures,
  runHubSoak,
} from './hub-soak-run.js';
import { integerOption, listOption } from './options.js';

// Ctrl-C or a timeout: exit through process.exit so the Redis and node children are killed.
for (const signal of ['SIGINT', 'SIGTERM'] as const) process.once(signal, () => process.exit(130));

const { values } = parseArgs({
  options: {
    updates: { type: 'string' },
    topics: { type: 'string' },
    subscribers: { type: 'string' },
    'reply-loss-every-ms': { type: 'string' },
    faults: { type: 'string' },
  },
});
const defaults = HUB_SOAK_DEFAULTS;
const result = await runHubSoak({
  updates: integerOption(values.updates, 'updates', defaults.updates),
  topics: integerOption(values.topics, 'topics', defaults.topics),
  subscribers: integerOption(values.subscribers, 'subscribers', defaults.subscribers),
  replyLossEveryMs: integerOption(
    values['reply-loss-every-ms'],
    'reply-loss-every-ms',
    defaults.replyLossEveryMs,
  ),
  faults: listOption<HubFault>(values.faults, 'faults', HUB_FAULTS, defaults.faults),
  log: (line) => console.error(`[${new Date().toISOString()}] ${line}`),
});
console.log(formatHubTable(result));
const failures = hubSoakFailures(result);
for (const failure of failures) console.log(`FAIL ${failure}`);
console.log(failures.length === 0 ? 'PASS' : 'FAILED');
process.exit(failures.length === 0 ? 0 : 1);

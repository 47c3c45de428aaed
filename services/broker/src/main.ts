import { loadConfig } from '@herald/config';
import { authConfigProblem } from './auth.js';
import { brokerSpec } from './config.js';
import { startBroker } from './index.js';

// The one place that reads process.env (through loadConfig).
const config = loadConfig(brokerSpec, process.env, { ownedPrefixes: ['JWT_'] });
const authProblem = authConfigProblem(config);
if (authProblem) {
  process.stderr.write(`configuration error: ${authProblem}\n`);
  process.exit(1);
}
const broker = await startBroker(config);
broker.exitOnSignals();

import { loadConfig } from '@herald/config';
import { redisTopologyFrom } from '@herald/redis';
import { authConfigProblem } from './auth.js';
import { brokerSpec } from './config.js';
import { startBroker } from './index.js';

// The one place that reads process.env (through loadConfig).
const config = loadConfig(brokerSpec, process.env, { ownedPrefixes: ['JWT_'] });
try {
  // Exactly one Redis topology, or none (a ConfigError naming the variable).
  redisTopologyFrom(config);
} catch (error) {
  process.stderr.write(`configuration error: ${error instanceof Error ? error.message : String(error)}\n`);
  process.exit(1);
}
const authProblem = authConfigProblem(config);
if (authProblem) {
  process.stderr.write(`configuration error: ${authProblem}\n`);
  process.exit(1);
}
const broker = await startBroker(config);
broker.exitOnSignals();

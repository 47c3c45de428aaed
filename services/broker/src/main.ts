import { exitOnConfigError, isConfigError, loadConfig } from '@herald/config';
import { announceListening, exitWithParent } from '@herald/http';
import { redisTopologyFrom } from '@herald/redis';
import { authConfigProblem } from './auth.js';
import { brokerSpec } from './config.js';
import { startBroker } from './index.js';

// The one place that reads process.env (through loadConfig). `BROKER_` and `JWT_` are the
// broker's own prefixes: an unknown name under them is a typo and stops the boot (the names
// Kubernetes injects for a Service named `broker`, BROKER_SERVICE_HOST…, are not refused).
const config = loadConfig(brokerSpec, process.env, { ownedPrefixes: ['JWT_', 'BROKER_'] });
try {
  // Exactly one Redis topology, or none (a ConfigError naming the variable).
  redisTopologyFrom(config);
} catch (error) {
  exitOnConfigError(error);
}
const authProblem = authConfigProblem(config);
if (authProblem) {
  process.stderr.write(`configuration error: ${authProblem}\n`);
  process.exit(1);
}
let broker: Awaited<ReturnType<typeof startBroker>>;
try {
  broker = await startBroker(config, { exitOnSignals: true });
} catch (error) {
  if (isConfigError(error)) exitOnConfigError(error);
  // A port in use, an unreadable TLS file…: one line, no stack (LOG_LEVEL=debug shows it).
  process.stderr.write(`broker failed to start: ${error instanceof Error ? error.message : String(error)}\n`);
  if (config.LOG_LEVEL === 'debug' || config.LOG_LEVEL === 'trace') console.error(error);
  process.exit(1);
}
exitWithParent();
announceListening('broker', broker.address);

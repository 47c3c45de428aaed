import { loadConfig } from '@herald/config';
import { hubSpec, validateHubConfig } from './config.js';
import { createHub } from './hub.js';

// The only place the hub reads process.env (contracts.md).
const config = loadConfig(hubSpec, process.env, { ownedPrefixes: ['MERCURE_'] });
try {
  validateHubConfig(config);
} catch (error) {
  process.stderr.write(`configuration error: ${error instanceof Error ? error.message : String(error)}\n`);
  process.exit(1);
}
const server = createHub({ config });
server.exitOnSignals();
try {
  await server.listen();
} catch (error) {
  server.app.log.fatal({ err: error }, 'hub failed to start');
  process.exit(1);
}

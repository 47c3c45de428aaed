import { exitOnConfigError, loadConfig } from '@herald/config';
import { announceListening, exitWithParent } from '@herald/http';
import { hubSpec, validateHubConfig } from './config.js';
import { createHub } from './hub.js';

// The only place the hub reads process.env (contracts.md). A configuration error, found here or
// while the hub is assembled (auth keys, JWKS URLs), is one line naming the variable, exit 1.
const config = loadConfig(hubSpec, process.env, { ownedPrefixes: ['MERCURE_'] });
let server: ReturnType<typeof createHub>;
try {
  validateHubConfig(config);
  server = createHub({ config });
} catch (error) {
  exitOnConfigError(error);
}
server.exitOnSignals();
exitWithParent();
try {
  announceListening('hub', await server.listen());
} catch (error) {
  server.app.log.fatal({ err: error }, 'hub failed to start');
  process.exit(1);
}

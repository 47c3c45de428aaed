import { fileURLToPath } from 'node:url';
import { type LoadScriptsOptions, loadScripts, type ScriptSet } from '@herald/redis';

/** `services/broker/lua/`, next to `src/` and `dist/` alike. */
export const luaDirectory = fileURLToPath(new URL('../lua/', import.meta.url));

/**
 * The broker's scripts; shared logic comes from `lua/includes/` through `--@include`, the clock
 * from `@herald/redis` (`options.clock`: Redis TIME by default, a key a test moves with 'key').
 */
export function loadBrokerScripts(options: LoadScriptsOptions = {}): ScriptSet {
  return loadScripts(luaDirectory, options);
}

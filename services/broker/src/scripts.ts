import { fileURLToPath } from 'node:url';
import { loadScripts, type ScriptSet } from '@herald/redis';

/** `services/broker/lua/`, next to `src/` and `dist/` alike. */
export const luaDirectory = fileURLToPath(new URL('../lua/', import.meta.url));

/** The broker's scripts; shared logic comes from `lua/includes/` through `--@include`. */
export function loadBrokerScripts(directory = luaDirectory): ScriptSet {
  return loadScripts(directory);
}

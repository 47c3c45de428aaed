import { createHash } from 'node:crypto';
import { readdirSync, readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import type { LuaScript, ScriptSet } from '@herald/redis';

/** `services/broker/lua/`, next to `src/` and `dist/` alike. */
export const luaDirectory = fileURLToPath(new URL('../lua/', import.meta.url));

const FILE_NAME = /^(?<name>[a-zA-Z][\w]*?)-(?<keys>\d+)\.lua$/;
const INCLUDE = /^--@include (\w+)\s*$/m;

/**
 * @herald/redis's loadScripts, plus `--@include <name>` (from `lua/includes/<name>.lua`) so
 * the lease, ack and push logic shared by several scripts exists once, as bullmq's includes do.
 */
export function loadBrokerScripts(directory = luaDirectory): ScriptSet {
  const scripts = new Map<string, LuaScript>();
  for (const file of readdirSync(directory).sort()) {
    const match = FILE_NAME.exec(file);
    if (!match?.groups) continue;
    let source = readFileSync(new URL(file, `file://${directory}`), 'utf8');
    for (let include = INCLUDE.exec(source); include; include = INCLUDE.exec(source)) {
      const body = readFileSync(new URL(`includes/${include[1]}.lua`, `file://${directory}`), 'utf8');
      source = source.replace(include[0], () => body);
    }
    const name = match.groups.name as string;
    scripts.set(name, {
      name,
      numberOfKeys: Number(match.groups.keys),
      source,
      sha: createHash('sha1').update(source).digest('hex'),
    });
  }
  return scripts;
}

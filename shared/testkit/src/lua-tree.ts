/*
 * What the Lua checkers (lua-keys.ts, lua-helpers.ts, lua-header.ts) share: a script as the
 * loader gives it, its parse and a walk over the tree.
 */
import luaparse from 'luaparse';

/** A script as `loadScripts` (@herald/redis) gives it: `--@include`s expanded. */
export interface LoadedScript {
  readonly name: string;
  readonly numberOfKeys: number;
  readonly source: string;
}

/** Redis runs Lua 5.1: the parse the checkers read, with lines and source ranges. */
export function parseLua(source: string): luaparse.Chunk {
  return luaparse.parse(source, { locations: true, ranges: true, luaVersion: '5.1' });
}

/** Every node of a tree, parents before children. */
export function walk(node: luaparse.Node, visit: (node: luaparse.Node) => void): void {
  visit(node);
  for (const value of Object.values(node)) {
    if (Array.isArray(value)) {
      for (const item of value)
        if (item && typeof item === 'object' && 'type' in item) walk(item as luaparse.Node, visit);
    } else if (value && typeof value === 'object' && 'type' in value) {
      walk(value as luaparse.Node, visit);
    }
  }
}

/*
 * `@herald/testkit/lua`: the checkers every service runs over its Lua scripts (issue #23, item
 * 3): keys (lua-keys.ts), shipped helpers (lua-helpers.ts), headers (lua-header.ts).
 */

export { headerProblems, nameProblems } from './lua-header.js';
export { type HelperGraph, helperGraph, helperProblems, type TopLevelLocal } from './lua-helpers.js';
export { type KeyViolation, scanScriptKeys, scanScripts } from './lua-keys.js';
export type { LoadedScript } from './lua-tree.js';

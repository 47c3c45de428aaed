/*
 * The Lua conventions of the broker's scripts (issue #23, item 3; shared/redis/README.md, "Lua
 * scripts"), checked by the checkers the hub's scripts run too (`@herald/testkit/lua`): each
 * script ships only the helpers it calls, each defined before its first use.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { helperProblems } from '@herald/testkit/lua';
import { loadBrokerScripts } from '../src/scripts.js';

describe('broker Lua scripts', () => {
  for (const clock of ['redis', 'key'] as const) {
    it(`ship no helper they never call, none used before its include (clock: ${clock})`, () => {
      const scripts = [...loadBrokerScripts({ clock }).values()];
      assert.ok(scripts.length >= 19, `${scripts.length} scripts`);
      assert.deepEqual(scripts.flatMap(helperProblems), []);
    });
  }
});

/*
 * The Lua conventions of the broker's scripts (issue #23, item 3; shared/redis/README.md, "Lua
 * scripts"), checked by the checkers the hub's scripts run too (`@herald/testkit/lua`): the
 * naming rule, the header listing every KEYS/ARGV index the code reads, and each script ships
 * only the helpers it calls, each defined before its first use.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { headerProblems, helperProblems, nameProblems } from '@herald/testkit/lua';
import { loadBrokerScripts } from '../src/scripts.js';

describe('broker Lua scripts', () => {
  const scripts = [...loadBrokerScripts().values()];

  it('are named <name>-<numberOfKeys>.lua in kebab-case', () => {
    assert.ok(scripts.length >= 19, `${scripts.length} scripts`);
    assert.deepEqual(scripts.flatMap(nameProblems), []);
  });

  it('open with a header listing every KEYS and ARGV index they read, the reply and Resend-safe', () => {
    assert.deepEqual(scripts.flatMap(headerProblems), []);
  });

  for (const clock of ['redis', 'key'] as const) {
    it(`ship no helper they never call, none used before its include (clock: ${clock})`, () => {
      assert.deepEqual([...loadBrokerScripts({ clock }).values()].flatMap(helperProblems), []);
    });
  }
});

/*
 * The Lua conventions of the hub's scripts (issue #23, item 3; shared/redis/README.md, "Lua
 * scripts"), checked by the checkers the broker's scripts run too (`@herald/testkit/lua`): the
 * naming rule, the header listing every KEYS/ARGV index the code reads, and no helper shipped
 * that the script never calls.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { loadScripts } from '@herald/redis';
import { headerProblems, helperProblems, nameProblems } from '@herald/testkit/lua';
import { LUA_DIRECTORY } from '../src/transport-redis.js';

describe('hub Lua scripts', () => {
  const scripts = [...loadScripts(LUA_DIRECTORY).values()];

  it('are found', () => {
    assert.deepEqual(scripts.map((script) => script.name).sort(), ['find', 'lease-renew', 'publish', 'reap']);
  });

  it('are named <name>-<numberOfKeys>.lua in kebab-case', () => {
    assert.deepEqual(scripts.flatMap(nameProblems), []);
  });

  it('open with a header listing every KEYS and ARGV index they read, the reply and Resend-safe', () => {
    assert.deepEqual(scripts.flatMap(headerProblems), []);
  });

  it('ship no helper they never call', () => {
    assert.deepEqual(scripts.flatMap(helperProblems), []);
  });
});

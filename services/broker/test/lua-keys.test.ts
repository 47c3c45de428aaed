/*
 * The key discipline of the broker's scripts (issue #12; docs/broker-topologies.md "Redis topologies"):
 * every key a script touches is a declared KEYS[i] or a suffix on one (test/lua-keys.ts), and
 * every script call, MULTI and transaction of the Redis backend stays in one hash slot.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { keySlot } from '@herald/testkit';
import { slotTag } from '../src/redis/context.js';
import { luaDirectory } from '../src/scripts.js';
import { type KeyViolation, scanScriptDirectory, scanScriptKeys } from './lua-keys.js';

function lines(violations: KeyViolation[]): string[] {
  return violations.map(({ script, line, command, message }) => `${script}:${line} ${command}: ${message}`);
}

describe('Lua key discipline', () => {
  it('every key of every broker script is a declared KEYS[i] or a suffix on one', () => {
    assert.deepEqual(lines(scanScriptDirectory(luaDirectory)), []);
  });

  it('so is the test clock key the scripts read when loaded on the key clock', () => {
    assert.deepEqual(lines(scanScriptDirectory(luaDirectory, { clock: 'key' })), []);
  });

  // The scanner itself: each rule on a script that breaks it, and the forms it must accept.
  const cases: { name: string; source: string; violations: number }[] = [
    { name: 'declared key', source: "redis.call('GET', KEYS[1])", violations: 0 },
    {
      name: 'suffix on a declared key',
      source: "local b = KEYS[1]\nredis.call('HGET', b .. 'cfg', 'x')",
      violations: 0,
    },
    { name: 'key from ARGV', source: "redis.call('GET', ARGV[1])", violations: 1 },
    { name: 'literal key', source: "redis.call('GET', 'global')", violations: 1 },
    { name: 'prefix before the declared key', source: "redis.call('GET', 'x' .. KEYS[1])", violations: 1 },
    {
      name: 'parameter bound to a declared key at every call',
      source:
        "local function f(base) return redis.call('GET', base .. 'a') end\nf(KEYS[1])\nf(KEYS[2] .. 'x')",
      violations: 0,
    },
    {
      name: 'parameter bound to ARGV at one call',
      source: "local function f(base) return redis.call('GET', base .. 'a') end\nf(KEYS[1])\nf(ARGV[1])",
      violations: 1,
    },
    {
      name: 'function result built on a declared key',
      source:
        "local function k(b, p) return b .. 'c:' .. p end\nredis.call('HGET', k(KEYS[1], ARGV[1]), 'f')",
      violations: 0,
    },
    {
      name: 'table field from ARGV',
      source: "local op = { base = ARGV[1] }\nredis.call('HGET', op.base .. 'cfg', 'f')",
      violations: 1,
    },
    {
      name: 'table field from KEYS',
      source: "local op = { base = KEYS[tonumber(ARGV[1])] }\nredis.call('HGET', op.base .. 'cfg', 'f')",
      violations: 0,
    },
    {
      name: 'loop variable',
      source: "for _, k in ipairs(redis.call('SMEMBERS', KEYS[1])) do redis.call('DEL', k) end",
      violations: 1,
    },
    { name: 'every argument of DEL is a key', source: "redis.call('DEL', KEYS[1], ARGV[1])", violations: 1 },
    { name: 'command without a key', source: "redis.call('TIME')", violations: 0 },
    { name: 'unknown command', source: "redis.call('OBJECT', 'ENCODING', KEYS[1])", violations: 1 },
    { name: 'pcall is checked too', source: "redis.pcall('GET', ARGV[1])", violations: 1 },
    {
      name: 'a name reused for a non-key value',
      source: "local key = KEYS[1]\nredis.call('GET', key)\nkey = ARGV[1]",
      violations: 1,
    },
  ];
  for (const { name, source, violations } of cases) {
    it(`scanner: ${name}`, () => {
      assert.equal(
        scanScriptKeys(name, source).length,
        violations,
        lines(scanScriptKeys(name, source)).join('\n'),
      );
    });
  }
});

describe('slotTag', () => {
  // Redis Cluster's own hash (CRC16 of the tag, @herald/testkit's keySlot): slotTag must pick
  // the text Redis hashes, or the one-slot checks of the broker would check the wrong thing.
  const keys = [
    'herald:broker:{orders.email}:cfg',
    'herald:broker:{orders.email}:s:p%3A1',
    'herald:broker:{orders}:orders.email:c:p:g',
    'plain-key',
    'a{}b{c}',
    'a{b}{c}',
    'a{b',
    '{}',
    'x}{y}',
  ];
  for (const key of keys) {
    it(`${key}: the slot of its tag is its slot`, () => {
      assert.equal(keySlot(slotTag(key)), keySlot(key));
    });
  }
  it('every key built on a queue base shares its slot', () => {
    const base = 'herald:broker:{orders.email}:';
    for (const suffix of ['cfg', 's:p', 'c:p:g', 'lease:0192', 'stats', 'la:x', 'ready:g']) {
      assert.equal(keySlot(base + suffix), keySlot(base));
    }
  });
});

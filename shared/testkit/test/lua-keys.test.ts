/*
 * The key checker both services run over their scripts (src/lua-keys.ts): each rule on a script
 * that breaks it, and the forms it must accept.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { type KeyViolation, scanScriptKeys, scanScripts } from '../src/lua.js';

function lines(violations: KeyViolation[]): string[] {
  return violations.map(({ script, line, command, message }) => `${script}:${line} ${command}: ${message}`);
}

describe('Lua key checker', () => {
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
    { name: 'a channel declared as a key', source: "redis.call('PUBLISH', KEYS[4], 'm')", violations: 0 },
    { name: 'a channel from ARGV', source: "redis.call('SPUBLISH', ARGV[2], 'm')", violations: 1 },
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

  it('scans every script of a set, naming the script and line', () => {
    const scripts = [
      { name: 'good', numberOfKeys: 1, source: "redis.call('GET', KEYS[1])" },
      { name: 'bad', numberOfKeys: 1, source: "local x = 1\nredis.call('GET', ARGV[1])" },
    ];
    assert.deepEqual(lines(scanScripts(scripts)), [
      'bad:2 GET: key ARGV[1] is not a declared KEYS[i] or a suffix on one',
    ]);
  });
});

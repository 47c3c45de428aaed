/*
 * The header and naming checker (src/lua-header.ts): each rule on a script that breaks it, and
 * the forms it must accept (groups, one key per queue touched, includes reading KEYS[1]).
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { headerProblems, nameProblems } from '../src/lua.js';

const header = (...lines: string[]) => ['--[[', '  What it does.', ...lines, ']]'].join('\n');
const complete = (...entries: string[]) =>
  header(...entries, '  Returns 1.', '  Resend-safe: writes nothing.');
const check = (source: string, numberOfKeys = 1, name = 'script') =>
  headerProblems({ name, numberOfKeys, source });

describe('Lua header checker', () => {
  it('accepts a header listing every index the code reads', () => {
    const source = `${complete('  KEYS[1]  base: the queue base', '  ARGV[1]  leaseId: the lease', '  ARGV[2..]  pairs: partition, group')}
local lease = ARGV[1]
for i = 2, #ARGV, 2 do redis.call('HGET', KEYS[1] .. ARGV[i], lease) end
return 1`;
    assert.deepEqual(check(source), []);
  });

  it('reports a KEYS or ARGV index the code reads and the header does not list', () => {
    const source = `${complete('  KEYS[1]  base: the queue base', '  ARGV[1]  group: the group')}
return { KEYS[1], ARGV[1], ARGV[3] }`;
    assert.deepEqual(check(source), ['script-1.lua:8 ARGV[3] is read but not in the header']);
  });

  it('reports a key index the file name does not count, unless the header lists the rest', () => {
    const closed = `${complete('  KEYS[1]  a: one key', '  KEYS[2]  b: another')}
return KEYS[2]`;
    assert.deepEqual(check(closed), ['script-1.lua:8 KEYS[2] is read but the file name says 1 keys']);
    const open = `${complete('  KEYS[1]  a: one key', '  KEYS[2..]  queues: one base per queue touched')}
for k = 2, #KEYS do redis.call('GET', KEYS[k]) end
return KEYS[2]`;
    assert.deepEqual(check(open), []);
  });

  it('reports KEYS and ARGV read whole or at a computed index without an open entry', () => {
    const source = `${complete('  KEYS[1]  base: the queue base', '  ARGV[1]  first: a value')}
redis.call('HSET', KEYS[1], unpack(ARGV, 1))
return ARGV[#ARGV]`;
    assert.deepEqual(check(source), [
      'script-1.lua:9 ARGV is read at a computed index: the header needs an open entry (ARGV[i..])',
      'script-1.lua:8 ARGV is read as a whole: the header needs an open entry (ARGV[i..])',
      'script-1.lua:9 ARGV is read as a whole: the header needs an open entry (ARGV[i..])',
    ]);
  });

  it('reports every key the file name counts that the header leaves out', () => {
    const source = `${complete('  KEYS[1]  a: one key')}
return 1`;
    assert.deepEqual(check(source, 2), ['script-2.lua: KEYS[2] is not in the header']);
  });

  it('reports an entry without a name, and a header without Returns or Resend-safe', () => {
    const source = `${header('  KEYS[1]  the queue base')}
return KEYS[1]`;
    assert.deepEqual(check(source), [
      'script-1.lua: header entry "KEYS[1]  the queue base" is not "<name>: <meaning>"',
      'script-1.lua: the header has no Returns line',
      'script-1.lua: the header has no "Resend-safe: …" line',
    ]);
  });

  it('reports a script that does not open with a --[[ ]] block', () => {
    assert.deepEqual(check("-- KEYS[1] base: a key\nreturn redis.call('GET', KEYS[1])"), [
      'script-1.lua: does not open with a --[[ … ]] header',
      'script-1.lua: KEYS[1] is not in the header',
      'script-1.lua:2 KEYS[1] is read but not in the header',
    ]);
  });
});

describe('Lua naming rule', () => {
  const cases: [string, boolean][] = [
    ['extend-lease', true],
    ['streams-cycle', true],
    ['pop', true],
    ['extendLease', false],
    ['sweep_leases', false],
    ['-pop', false],
  ];
  for (const [name, valid] of cases) {
    it(`${name}-1.lua is ${valid ? '' : 'not '}kebab-case`, () => {
      assert.equal(nameProblems({ name, numberOfKeys: 1, source: '' }).length, valid ? 0 : 1);
    });
  }
});

/*
 * The shipped-helpers checker (src/lua-helpers.ts): a dead helper, a helper used before its
 * definition, and the forms it must accept (helpers reached through others, values whose
 * initialisation runs, shadowing names).
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { helperProblems } from '../src/lua.js';

const problems = (source: string) => helperProblems({ name: 's', numberOfKeys: 1, source });

describe('Lua helpers checker', () => {
  it('accepts helpers the script reaches directly or through another helper', () => {
    const source = [
      'local function double(v) return v * 2 end',
      'local function quadruple(v) return double(double(v)) end',
      'local LIMIT = 10',
      'local function capped(v) return math.min(v, LIMIT) end',
      'return capped(quadruple(tonumber(ARGV[1])))',
    ].join('\n');
    assert.deepEqual(problems(source), []);
  });

  it('reports a helper nothing reaches, and a value only a dead helper reads', () => {
    const source = [
      'local WINDOW = 60000',
      'local function unused(v) return v + WINDOW end',
      'local function used(v) return v end',
      'return used(1)',
    ].join('\n');
    assert.deepEqual(problems(source), [
      's:1 local WINDOW is never used: leave its include out',
      's:2 local function unused is never used: leave its include out',
    ]);
  });

  it('reports a helper used before the include that defines it', () => {
    const source = [
      'local function quadruple(v) return double(double(v)) end',
      'local function double(v) return v * 2 end',
      'return quadruple(1)',
    ].join('\n');
    assert.deepEqual(problems(source), [
      's:2 local function double is never used: leave its include out',
      's:1 double is used before its definition: include what defines it first',
      's:1 double is used before its definition: include what defines it first',
    ]);
  });

  it('a parameter or inner local of the same name is not a use of the helper', () => {
    const source = [
      'local function field(e, name) return e[name] end',
      'local function count(field) return field + 1 end',
      'local x = count(1)',
      'do local field = 2; x = x + field end',
      'return x',
    ].join('\n');
    assert.deepEqual(problems(source), ['s:1 local function field is never used: leave its include out']);
  });

  it('a value whose initialisation calls something runs: a root, not a dead value', () => {
    const source = ['local function now() return 1 end', 'local unused = now()', 'return 0'].join('\n');
    assert.deepEqual(problems(source), []);
  });

  it('a recursive helper reached once is used; one only calling itself is not', () => {
    const source = [
      'local function walk(n) if n > 0 then return walk(n - 1) end return 0 end',
      'local function loop(n) return loop(n) end',
      'return walk(3)',
    ].join('\n');
    assert.deepEqual(problems(source), ['s:2 local function loop is never used: leave its include out']);
  });
});

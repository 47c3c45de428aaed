/*
 * The Lua conventions (shared/redis/README.md, "Lua scripts") on the limits' scripts, by the
 * checkers both services run (`@herald/testkit/lua`): names, headers, no helper shipped unused,
 * and every key a declared KEYS[i] (one base, so one Cluster slot per call).
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { headerProblems, helperProblems, nameProblems, scanScripts } from '@herald/testkit/lua';
import { loadLimitScripts } from '../src/index.js';

describe('limits Lua scripts', () => {
  const scripts = [...loadLimitScripts().values()];

  it('are found', () => {
    assert.deepEqual(scripts.map((script) => script.name).sort(), [
      'inflight-ack',
      'inflight-extend',
      'inflight-reserve',
      'inflight-settle',
      'node-renew',
      'rate-take',
      'slot-acquire',
      'slot-release',
      'usage',
    ]);
  });

  it('follow the naming rule, the header rule and ship no helper they never call', () => {
    assert.deepEqual(scripts.flatMap(nameProblems), []);
    assert.deepEqual(scripts.flatMap(headerProblems), []);
    assert.deepEqual(scripts.flatMap(helperProblems), []);
  });

  it('touch only keys derived from a declared KEYS[i]', () => {
    const violations = scanScripts(scripts);
    assert.deepEqual(
      violations.map(({ script, line, command, message }) => `${script}:${line} ${command}: ${message}`),
      [],
    );
  });
});

/*
 * The key discipline of the broker's scripts (issue #12; docs/broker-topologies.md "Redis topologies"):
 * every key a script touches is a declared KEYS[i] or a suffix on one (the checker both services
 * run, `@herald/testkit/lua`), and every script call, MULTI and transaction of the Redis backend
 * stays in one hash slot.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { keySlot } from '@herald/testkit';
import { type KeyViolation, scanScripts } from '@herald/testkit/lua';
import { slotTag } from '../src/redis/context.js';
import { loadBrokerScripts } from '../src/scripts.js';

function lines(violations: KeyViolation[]): string[] {
  return violations.map(({ script, line, command, message }) => `${script}:${line} ${command}: ${message}`);
}

describe('Lua key discipline', () => {
  it('every key of every broker script is a declared KEYS[i] or a suffix on one', () => {
    assert.deepEqual(lines(scanScripts(loadBrokerScripts().values())), []);
  });

  it('so is the test clock key the scripts read when loaded on the key clock', () => {
    assert.deepEqual(lines(scanScripts(loadBrokerScripts({ clock: 'key' }).values())), []);
  });
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

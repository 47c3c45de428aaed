import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { type BrokerRoleNames, hasAccess, rolesFromClaims } from '../src/broker-access.js';
import type { AccessLevel } from '../src/broker-routes.js';

const LEVELS: readonly AccessLevel[] = ['public', 'read-only', 'write-only', 'read-write', 'admin'];

// [roles held, levels that pass]: the role sets of docs/auth.md, not a ladder.
// biome-ignore format: a table, one case per line
const ROLE_SETS: readonly (readonly [readonly string[], readonly AccessLevel[]])[] = [
  [['admin'], ['public', 'read-only', 'write-only', 'read-write', 'admin']],
  [['read-write'], ['public', 'read-only', 'write-only', 'read-write']],
  [['read-only'], ['public', 'read-only']],
  // The pure producer: push only; refused on every read and consume route.
  [['write-only'], ['public', 'write-only']],
  [['read-only', 'write-only'], ['public', 'read-only', 'write-only']],
  [[], ['public']],
  [['Admin', 'superuser'], ['public']],
];

describe('role-set decisions', () => {
  for (const [roles, passing] of ROLE_SETS) {
    for (const level of LEVELS) {
      const expected = passing.includes(level);
      it(`[${roles.join(', ')}] on a ${level} route → ${expected ? 'allowed' : '403'}`, () => {
        assert.equal(hasAccess(new Set(roles), level), expected);
      });
    }
  }

  it('uses remapped role names', () => {
    const names: BrokerRoleNames = {
      admin: 'ops',
      readWrite: 'rw',
      readOnly: 'viewer',
      writeOnly: 'queen.write',
    };
    assert.equal(hasAccess(new Set(['queen.write']), 'write-only', names), true);
    assert.equal(hasAccess(new Set(['queen.write']), 'read-only', names), false);
    assert.equal(hasAccess(new Set(['write-only']), 'write-only', names), false);
    assert.equal(hasAccess(new Set(['ops']), 'admin', names), true);
  });
});

describe('roles from claims', () => {
  const defaults = { rolesClaim: 'role', rolesArrayClaim: 'roles' };
  // [name, payload, claim names, expected roles]
  // biome-ignore format: a table, one case per line
  const cases: readonly (readonly [string, Record<string, unknown>, typeof defaults, readonly string[]])[] = [
    ['single-value claim', { role: 'admin' }, defaults, ['admin']],
    ['array claim', { roles: ['read-only', 'write-only'] }, defaults, ['read-only', 'write-only']],
    ['both claims count', { role: 'read-only', roles: ['write-only'] }, defaults, ['read-only', 'write-only']],
    ['remapped single claim (IdP scope)', { scope: 'queen.write' }, { rolesClaim: 'scope', rolesArrayClaim: 'roles' }, ['queen.write']],
    ['remapped array claim', { groups: ['a', 'b'] }, { rolesClaim: 'role', rolesArrayClaim: 'groups' }, ['a', 'b']],
    ['nested claims are invisible (literal keys, not paths)', { realm_access: { roles: ['admin'] } }, { rolesClaim: 'role', rolesArrayClaim: 'realm_access.roles' }, []],
    ['a dotted literal key is read', { 'realm_access.roles': ['admin'] }, { rolesClaim: 'role', rolesArrayClaim: 'realm_access.roles' }, ['admin']],
    ['non-string values are ignored', { role: 7, roles: ['ok', 3, null, { admin: true }] }, defaults, ['ok']],
    ['a string in the array claim is not an array', { roles: 'admin' }, defaults, []],
    ['inherited properties are not claims', {}, { rolesClaim: 'constructor', rolesArrayClaim: '__proto__' }, []],
  ];
  for (const [name, payload, names, expected] of cases) {
    it(name, () => {
      assert.deepEqual([...rolesFromClaims(payload, names)].sort(), [...expected].sort());
    });
  }
});

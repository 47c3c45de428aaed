/*
 * The deny list every node checks each request against (issue #24 item 3; docs/security.md,
 * "Revocation"): entry validation, what a jti and a sub entry cover, expiry on the node's clock.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import {
  DenyList,
  InvalidRevocationError,
  parseRevocationEntry,
  type RevocableToken,
  type RevocationEntry,
  revocationFromRequest,
  revocationId,
} from '../src/revocation.js';

const BEFORE = 1_700_000_000_000;

describe('revocation entries', () => {
  // [value, message of the refusal]
  // biome-ignore format: a table, one case per line
  const refused: readonly (readonly [unknown, RegExp])[] = [
    [null, /JSON object/],
    [[], /JSON object/],
    [{ kind: 'session' }, /kind must be "jti" or "sub"/],
    [{ kind: 'jti' }, /jti must be a non-empty string/],
    [{ kind: 'jti', jti: '' }, /jti must be a non-empty string/],
    [{ kind: 'jti', jti: 'x'.repeat(257) }, /jti exceeds 256 characters/],
    [{ kind: 'sub', sub: 'alice' }, /before must be a time/],
    [{ kind: 'sub', sub: 'alice', before: 1.5 }, /before must be a time/],
    [{ kind: 'sub', sub: 'y'.repeat(257), before: 0 }, /sub exceeds 256 characters/],
    [{ kind: 'jti', jti: 'a', expiresAt: -1 }, /expiresAt must be a time/],
    [{ kind: 'jti', jti: 'a', expiresAt: '2030' }, /expiresAt must be a time/],
  ];
  for (const [value, message] of refused) {
    it(`refuses ${JSON.stringify(value)?.slice(0, 60)}`, () => {
      assert.throws(
        () => parseRevocationEntry(value),
        (error: unknown) => {
          assert.ok(error instanceof InvalidRevocationError);
          assert.match(error.message, message);
          return true;
        },
      );
    });
  }

  it('keeps only the fields of its kind', () => {
    assert.deepEqual(parseRevocationEntry({ kind: 'jti', jti: 'a', sub: 'ignored', expiresAt: 5 }), {
      kind: 'jti',
      jti: 'a',
      expiresAt: 5,
    });
    assert.deepEqual(parseRevocationEntry({ kind: 'sub', sub: 'alice', before: BEFORE }), {
      kind: 'sub',
      sub: 'alice',
      before: BEFORE,
    });
  });

  it('names each entry by kind and value', () => {
    assert.equal(revocationId({ kind: 'jti', jti: 't-1' }), 'jti:t-1');
    assert.equal(revocationId({ kind: 'sub', sub: 'alice', before: 0 }), 'sub:alice');
  });
});

describe('DenyList', () => {
  const entries: RevocationEntry[] = [
    { kind: 'jti', jti: 'revoked-token' },
    { kind: 'sub', sub: 'alice', before: BEFORE },
  ];

  // [token, revoked]
  // biome-ignore format: a table, one case per line
  const cases: readonly (readonly [RevocableToken, boolean])[] = [
    [{ jti: 'revoked-token' }, true],
    [{ jti: 'revoked-token', sub: 'bob', iat: BEFORE / 1000 + 10 }, true],
    [{ jti: 'other-token' }, false],
    [{}, false],
    [{ sub: 'alice', iat: BEFORE / 1000 - 1 }, true], // issued before the cut-off
    [{ sub: 'alice', iat: BEFORE / 1000 }, false], // issued at it: not before
    [{ sub: 'alice', iat: BEFORE / 1000 + 1 }, false],
    [{ sub: 'alice' }, true], // no iat: cannot prove it was issued after
    [{ sub: 'bob' }, false],
    [{ sub: 'alice', jti: 'fresh', iat: BEFORE / 1000 + 60 }, false],
  ];
  for (const [token, revoked] of cases) {
    it(`${JSON.stringify(token)} is ${revoked ? 'revoked' : 'accepted'}`, () => {
      const list = new DenyList(() => BEFORE);
      list.replace(entries);
      assert.equal(list.isRevoked(token), revoked);
    });
  }

  it('ignores an entry from its expiresAt on, by the injected clock', () => {
    let now = BEFORE;
    const list = new DenyList(() => now);
    list.replace([
      { kind: 'jti', jti: 'short', expiresAt: BEFORE + 1000 },
      { kind: 'sub', sub: 'alice', before: BEFORE, expiresAt: BEFORE + 1000 },
    ]);
    assert.equal(list.isRevoked({ jti: 'short' }), true);
    assert.equal(list.isRevoked({ sub: 'alice' }), true);
    now = BEFORE + 1000;
    assert.equal(list.isRevoked({ jti: 'short' }), false);
    assert.equal(list.isRevoked({ sub: 'alice' }), false);
  });

  it('replace reports the entries that are new or whose cut-off moved, and drops the rest', () => {
    const list = new DenyList(() => BEFORE);
    assert.deepEqual(list.replace(entries), entries);
    assert.deepEqual(list.replace(entries), []);
    const moved: RevocationEntry = { kind: 'sub', sub: 'alice', before: BEFORE + 5000 };
    const added: RevocationEntry = { kind: 'jti', jti: 'second' };
    assert.deepEqual(list.replace([moved, added]), [moved, added]);
    assert.equal(list.size, 2);
    assert.equal(list.isRevoked({ jti: 'revoked-token' }), false);
  });
});

describe('revocation requests', () => {
  const NOW = BEFORE + 123;
  const unsigned = (claims: Record<string, unknown>) =>
    `${Buffer.from('{"alg":"HS256"}').toString('base64url')}.${Buffer.from(JSON.stringify(claims)).toString('base64url')}.sig`;

  // [body, entry]
  // biome-ignore format: a table, one case per line
  const accepted: readonly (readonly [unknown, RevocationEntry])[] = [
    [{ jti: 'a' }, { kind: 'jti', jti: 'a' }],
    [{ jti: 'a', expiresAt: NOW + 5 }, { kind: 'jti', jti: 'a', expiresAt: NOW + 5 }],
    [{ sub: 'alice' }, { kind: 'sub', sub: 'alice', before: NOW }], // before defaults to now
    [{ kind: 'sub', sub: 'alice', before: 7, expiresAt: 9 }, { kind: 'sub', sub: 'alice', before: 7, expiresAt: 9 }],
    [{ token: unsigned({ jti: 'from-token', exp: 1_900_000_000 }) }, { kind: 'jti', jti: 'from-token', expiresAt: 1_900_000_000_000 }],
    [{ token: unsigned({ jti: 'no-exp' }) }, { kind: 'jti', jti: 'no-exp' }], // stays until deleted
    [{ token: unsigned({ jti: 't', exp: 5 }), expiresAt: 10 }, { kind: 'jti', jti: 't', expiresAt: 10 }],
  ];
  for (const [body, entry] of accepted) {
    it(`reads ${JSON.stringify(body).slice(0, 70)}`, () => {
      assert.deepEqual(revocationFromRequest(body, NOW), entry);
    });
  }

  // [body, message]
  // biome-ignore format: a table, one case per line
  const refused: readonly (readonly [unknown, RegExp])[] = [
    ['jti', /JSON object/],
    [{}, /exactly one of jti, sub or token/],
    [{ jti: 'a', token: 'b' }, /exactly one of jti, sub or token/],
    [{ jti: 'a', before: 1 }, /before applies to sub only/],
    [{ kind: 'sub', jti: 'a' }, /kind "sub" does not fit/],
    [{ jti: 'a', extra: 1 }, /unknown field "extra"/],
    [{ token: unsigned({ sub: 'x' }) }, /no jti claim/],
    [{ token: 'a.b' }, /not a compact JWT/],
    [{ token: 'x'.repeat(70_000) }, /token exceeds/],
  ];
  for (const [body, message] of refused) {
    it(`refuses ${JSON.stringify(body).slice(0, 70)}`, () => {
      assert.throws(() => revocationFromRequest(body, NOW), message);
    });
  }
});

import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { HeraldError, publicMessage } from '@herald/errors';
import { AUTH_FAILURE_REASONS, AuthError, type AuthFailureReason, isAuthError } from '../src/errors.js';

// [reason, status]: the wire status each failure maps to.
// biome-ignore format: a table, one case per line
const STATUSES: readonly (readonly [AuthFailureReason, number])[] = [
  ['missing_token', 401],
  ['malformed_token', 401],
  ['alg_none', 401],
  ['alg_not_allowed', 401],
  ['alg_key_mismatch', 401],
  ['bad_signature', 401],
  ['expired', 401],
  ['revoked', 401],
  ['not_yet_valid', 401],
  ['issued_in_future', 401],
  ['issuer', 401],
  ['audience', 401],
  ['unknown_kid', 401],
  ['invalid_claims', 401],
  ['ambiguous_claims', 401],
  ['insecure_transport', 400],
  ['key_not_configured', 500],
  ['invalid_key', 500],
  ['forbidden', 403],
  ['unsupported_matcher', 501],
  ['invalid_pattern', 400],
];

describe('AuthError', () => {
  for (const [reason, status] of STATUSES) {
    it(`${reason} → ${status}`, () => {
      const error = new AuthError(reason);
      assert.equal(error.status, status);
      assert.equal(error.statusCode, status);
      assert.equal(error.code, `HERALD_AUTH_${reason.toUpperCase()}`);
      assert.equal(error.reason, reason);
      assert.ok(error instanceof HeraldError);
      assert.equal(publicMessage(error), error.message, 'auth texts are fixed: shown at every status');
      assert.ok(isAuthError(error));
    });
  }

  it('the table covers every reason', () => {
    assert.deepEqual(new Set(STATUSES.map(([reason]) => reason)), new Set(AUTH_FAILURE_REASONS));
  });

  it("keeps Queen's broker texts", () => {
    assert.equal(new AuthError('alg_not_allowed').message, 'Unsupported token algorithm');
    assert.equal(new AuthError('unknown_kid').message, 'Unknown key ID');
    assert.equal(new AuthError('forbidden').message, 'Insufficient permissions');
  });

  it('serialises to the broker wire shape without a stack', () => {
    const body = JSON.stringify(new AuthError('expired'));
    assert.equal(body, '{"error":"Token has expired"}');
  });

  it('a custom message and status replace the defaults', () => {
    const error = new AuthError('key_not_configured', 'HS secret not configured');
    assert.deepEqual([error.message, error.status], ['HS secret not configured', 500]);
  });
});

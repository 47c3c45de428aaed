import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { HeraldError, isHeraldError, publicMessage, statusOf } from '../src/index.js';

describe('HeraldError', () => {
  it('carries a code of the scheme, a status and a cause', () => {
    const cause = new Error('redis at 10.0.0.7:6379 refused');
    const error = new HeraldError('HERALD_BROKER_STORAGE_UNAVAILABLE', 503, 'Storage unavailable', {
      cause,
    });
    assert.equal(error.code, 'HERALD_BROKER_STORAGE_UNAVAILABLE');
    assert.equal(error.statusCode, 503);
    assert.equal(error.cause, cause);
    assert.ok(isHeraldError(error));
    assert.ok(error instanceof Error);
  });

  // biome-ignore format: a table, one case per line
  const badCodes = ['BROKER_QUEUE_FULL', 'HERALD_ERR_AUTH', 'HERALD_BROKER_', 'HERALD_BROKER_queue_full', 'HERALD_DB_DOWN'];
  for (const code of badCodes) {
    it(`refuses the code ${code}`, () => {
      assert.throws(() => new HeraldError(code as 'HERALD_HUB_X', 400, 'x'), /HERALD_<AREA>_<REASON>/);
    });
  }

  for (const status of [200, 302, 399, 600, 404.5]) {
    it(`refuses the status ${status}`, () => {
      assert.throws(() => new HeraldError('HERALD_HUB_X', status, 'x'), /not an HTTP error status/);
    });
  }
});

describe('publicMessage', () => {
  // [status, expose option, what a client reads]
  // biome-ignore format: a table, one case per line
  const cases: readonly (readonly [number, boolean | undefined, string])[] = [
    [400, undefined, 'the message'],
    [429, undefined, 'the message'],
    [400, false, 'Bad Request'],
    [500, undefined, 'Internal Server Error'],
    [503, undefined, 'Service Unavailable'],
    [503, true, 'the message'],
  ];
  for (const [status, expose, expected] of cases) {
    it(`${status} with expose ${expose} → ${expected}`, () => {
      const error = new HeraldError('HERALD_HTTP_TEST', status, 'the message', {
        ...(expose === undefined ? {} : { expose }),
      });
      assert.equal(publicMessage(error), expected);
      assert.equal(statusOf(error), status);
    });
  }

  it('never repeats the text of an error that is not a HeraldError', () => {
    const internal = Object.assign(new Error('ERR at 10.0.0.7: script failed'), { statusCode: 400 });
    assert.equal(publicMessage(internal), 'Internal Server Error');
    assert.equal(statusOf(internal), 500);
    assert.equal(publicMessage('a string'), 'Internal Server Error');
  });
});

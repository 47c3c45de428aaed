import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import * as auth from '@herald/auth';
import {
  cleanupRedis,
  SECURE,
  SseStream,
  signToken,
  startTestHub,
  subscriberToken,
  subscribeUrl,
  type TestHub,
} from './helpers.js';

/**
 * Issue #8, defect 3: the hub compiled every `match*` pattern before looking at the token, so
 * anyone could make a hub without anonymous access burn CPU and heap on hostile patterns. Now
 * a request without a (valid) token is refused before any pattern is compiled.
 */
after(cleanupRedis);

/** Patterns compiled so far in this process (the hub under test runs in it); undefined before the counter existed. */
function compilations(): number | undefined {
  const stats = (auth as { selectorCacheStats?: () => { compilations: number } }).selectorCacheStats;
  return stats?.().compilations;
}

const hostileRegexp = 'a{1000}'.repeat(585);
const unique = (index: number) => `https://example.com/${index}/`;

// [case, query parameters, extra headers]
// biome-ignore format: a table, one case per line
const REFUSED_BEFORE_COMPILING: readonly (readonly [string, [string, string][], Record<string, string>])[] = [
  ['a pattern that does not compile (was 400: compiled first)', [['matchRegexp', '(']], {}],
  ['the issue\'s 4 KiB repetition pattern', [['matchRegexp', hostileRegexp]], {}],
  ['a URL pattern whose protocol part backtracks', [['matchURLPattern', `${'{*}'.repeat(80)}x://example.com/`]], {}],
  ['a URI template', [['matchURITemplate', `${unique(1)}{id}`]], {}],
  ['a Regexp after an exact topic', [['match', unique(2)], ['matchRegexp', `${unique(3)}.*`]], {}],
  ['an invalid token', [['matchRegexp', `${unique(4)}.*`]], { authorization: 'Bearer not.a.token' }],
  ['a token signed with the wrong key', [['matchRegexp', `${unique(5)}.*`]], {
    authorization: `Bearer ${signToken({ mercure: { subscribe: ['*'] } }, 'wrong-key-wrong-key-wrong-key-0123')}`,
  }],
];

describe('subscribe authenticates before compiling patterns (anonymous off)', () => {
  let hub: TestHub;
  before(async () => {
    hub = await startTestHub('memory', { MERCURE_HEARTBEAT: '0' });
  });
  after(() => hub.close());

  for (const [name, parameters, headers] of REFUSED_BEFORE_COMPILING) {
    test(`401 without compiling: ${name}`, async () => {
      const before = compilations();
      const response = await fetch(subscribeUrl(hub.url, parameters), { headers: { ...SECURE, ...headers } });
      assert.equal(response.status, 401);
      await response.text();
      assert.notEqual(before, undefined, '@herald/auth counts compilations');
      assert.equal(compilations(), before, 'no pattern was compiled');
    });
  }

  test('with a valid token the patterns are compiled, and a bad one is a 400', async () => {
    const token = subscriberToken([{ match: '*' }]);
    const before = compilations();
    const response = await fetch(subscribeUrl(hub.url, [['matchRegexp', '(']]), {
      headers: { ...SECURE, authorization: `Bearer ${token}` },
    });
    assert.equal(response.status, 400);
    await response.text();
    assert.equal(compilations(), (before ?? Number.NaN) + 1);
  });

  test('with a valid token, a hostile pattern is refused by the compile bounds', async () => {
    const token = subscriberToken([{ match: '*' }]);
    const response = await fetch(subscribeUrl(hub.url, [['matchRegexp', hostileRegexp]]), {
      headers: { ...SECURE, authorization: `Bearer ${token}` },
    });
    assert.equal(response.status, 400);
    await response.text();
  });

  test('a subscription whose patterns together pass the program budget is refused (400)', async () => {
    const token = subscriberToken([{ match: '*' }]);
    // Each alone is accepted (~750 instructions); three exceed the 2000-instruction budget.
    const heavy = (index: number): [string, string] => ['matchRegexp', `${unique(index)}(?:[a-z]{0,60}/){6}`];
    const one = await SseStream.open(subscribeUrl(hub.url, [heavy(10)]), {
      authorization: `Bearer ${token}`,
    });
    assert.equal(one.status, 200);
    one.close();
    const three = await fetch(subscribeUrl(hub.url, [heavy(11), heavy(12), heavy(13)]), {
      headers: { ...SECURE, authorization: `Bearer ${token}` },
    });
    assert.equal(three.status, 400);
    assert.match(await three.text(), /instructions/);
  });
});

/*
 * A hub node killed with SIGKILL while its streams hold a subject's slots (issue #24, item 2:
 * "a node killed mid-budget releases its slots within the lease"): two real node processes on
 * one Redis, MERCURE_LIMIT_SUBSCRIPTIONS=2, a 3 s lease. Right after the kill the survivor still
 * refuses the subject (its slots count until the dead node's lease ends: never given back by the
 * dead node); within the lease it accepts again. Real time: the nodes are other processes.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { stopTestRedis, testRedisEnvironment, uniquePrefix, waitFor } from '@herald/testkit';
import { SUBSCRIBER_SECRET } from '../../services/hub/test/helpers.js';
import { type HubProcess, SseStream, signToken, spawnHub, subscribeUrl } from './support.js';

const LEASE_MS = 3000;

describe('a hub node killed with streams open under a subscription limit', () => {
  let doomed: HubProcess;
  let survivor: HubProcess;
  before(async () => {
    const environment = {
      ...(await testRedisEnvironment()),
      MERCURE_REDIS_PREFIX: uniquePrefix('limits-kill'),
      MERCURE_LIMIT_SUBSCRIPTIONS: '2',
      MERCURE_LIMIT_LEASE: String(LEASE_MS),
    };
    [doomed, survivor] = await Promise.all([spawnHub(environment), spawnHub(environment)]);
  });
  after(async () => {
    await Promise.all([doomed.stop(), survivor.stop()]);
    await stopTestRedis();
  });

  test('frees its slots when its lease expires, not before', async () => {
    const token = signToken({ sub: 'dana', mercure: { subscribe: [{ match: '*' }] } }, SUBSCRIBER_SECRET);
    const headers = { authorization: `Bearer ${token}` };
    const open = (node: HubProcess) =>
      SseStream.open(subscribeUrl(node.url, [['match', 'https://example.com/x']]), headers);
    const held = [await open(doomed), await open(doomed)];
    assert.deepEqual(
      held.map((stream) => stream.status),
      [200, 200],
    );
    assert.equal((await open(survivor)).status, 429);
    doomed.child.kill('SIGKILL');
    await doomed.exited;
    const killedAt = Date.now();
    // The dead node gave nothing back: its slots still count.
    assert.equal((await open(survivor)).status, 429);
    const accepted = await waitFor(
      async () => {
        const stream = await open(survivor);
        if (stream.status === 200) return stream;
        assert.equal(stream.status, 429);
        return undefined;
      },
      { what: 'the dead node lease to expire', timeoutMs: 30_000 },
    );
    // Not before the lease could have ended (it was last renewed at most a third of it before the kill).
    assert.ok(
      Date.now() - killedAt >= (LEASE_MS * 2) / 3 - 50,
      `accepted ${Date.now() - killedAt} ms after the kill`,
    );
    accepted.close();
  });
});

/*
 * The active-subscriptions registry's scripts are resend-safe (issue #9; shared/redis/README.md):
 * a reply-loss proxy between the hub and a private Redis swallows one script reply and cuts the
 * connection, so ioredis runs the script a second time.
 * - reap: the records claimed by the first run are still announced (`active: false`), not lost
 *   with the reply;
 * - lease-renew: a node whose entries were reaped still learns it and registers them again.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { KeyClock, loadScripts } from '@herald/redis';
import { RedisServer, ReplyLossProxy, scriptCall, waitFor } from '@herald/testkit';
import { Redis } from 'ioredis';
import { LUA_DIRECTORY } from '../src/transport-redis.js';
import { startTestHub, type TestHub } from './helpers.js';

const scripts = loadScripts(LUA_DIRECTORY);
function script(name: string) {
  const found = scripts.get(name);
  if (!found) throw new Error(`no script ${name}`);
  return scriptCall(found);
}

const PREFIX = 'resend:';
/** MERCURE_SUBSCRIPTIONS_LEASE: a lease round runs every third of it on the hub's clock. */
const LEASE = 1000;
const ROUND = Math.floor(LEASE / 3);
const keys = {
  history: `${PREFIX}{hub}:history`,
  subscriptions: `${PREFIX}{hub}:subscriptions`,
  leases: `${PREFIX}{hub}:node-leases`,
  nodeSubscriptions: (node: string) => `${PREFIX}{hub}:node-subscriptions:${node}`,
};

describe('subscription registry scripts under a lost reply (redis)', () => {
  let server: RedisServer;
  let proxy: ReplyLossProxy;
  let hub: TestHub;
  let redis: Redis;
  // The hub's lease rounds run when the test moves this clock (the first at start).
  const clock = new KeyClock(Date.now());
  before(async () => {
    server = await RedisServer.start();
    proxy = await ReplyLossProxy.start({ port: server.port });
    redis = new Redis(server.port, '127.0.0.1');
    hub = await startTestHub(
      'redis',
      {
        REDIS_URL: proxy.url,
        MERCURE_REDIS_PREFIX: PREFIX,
        MERCURE_SUBSCRIPTIONS: '1',
        MERCURE_SUBSCRIPTIONS_LEASE: String(LEASE),
      },
      { clock },
    );
  });
  after(async () => {
    await hub.close();
    redis.disconnect();
    await proxy.close();
    await server.destroy();
  });

  test('reap: the records the first run claimed are announced as ended', async () => {
    const record = {
      id: '/.well-known/mercure/subscriptions/exact/ghost-topic/urn%3Aghost',
      matchType: 'exact',
      match: 'ghost-topic',
      subscriber: 'urn:ghost',
    };
    // Only a run that starts after the ghost exists has something to claim and lose.
    let planted = false;
    const lost = proxy.loseNextReply((request, index) => planted && script('reap')(request, index));
    await redis
      .multi()
      .hset(keys.subscriptions, record.id, JSON.stringify(record))
      .sadd(keys.nodeSubscriptions('ghost'), record.id)
      .zadd(keys.leases, clock.now() - 1000, 'ghost')
      .exec();
    planted = true;
    // The next lease round reaps the ghost.
    await clock.advance(ROUND);
    await lost;
    await waitFor(
      async () => {
        const entries = (await redis.xrange(keys.history, '-', '+')) as [string, string[]][];
        return entries.some(([, fields]) => fields.join('\n').includes('urn:ghost'));
      },
      { what: "the ghost's subscription to be announced as ended" },
    );
    assert.equal(await redis.hexists(keys.subscriptions, record.id), 0);
  });

  test('lease-renew: entries reaped by a peer are registered again', async () => {
    const { transport } = hub.server.hub;
    const record = {
      id: '/.well-known/mercure/subscriptions/exact/mine/urn%3Alocal',
      matchType: 'exact',
      match: 'mine',
      subscriber: 'urn:local',
    };
    await transport.addSubscriptions([record]);
    const [node] = await redis.zrange(keys.leases, 0, -1);
    assert.ok(node, 'the hub holds a lease');
    // A peer reaped this node's entries (as after a long pause): the lease and the entries are gone.
    // Only a renewal that starts after the reap finds the lease gone.
    let reaped = false;
    const lost = proxy.loseNextReply((request, index) => reaped && script('lease-renew')(request, index));
    await redis
      .multi()
      .zrem(keys.leases, node)
      .hdel(keys.subscriptions, record.id)
      .del(keys.nodeSubscriptions(node))
      .exec();
    reaped = true;
    // The next lease round renews, finds the lease gone, and registers the entries again.
    await clock.advance(ROUND);
    await lost;
    await waitFor(async () => (await redis.hexists(keys.subscriptions, record.id)) === 1, {
      what: 'the reaped entry to be registered again',
    });
    await transport.removeSubscriptions([record.id]);
  });
});

/*
 * Each limits script that changes state, run twice by ioredis (shared/redis/README.md, "Every
 * state-changing script is resend-safe"): ReplyLossProxy swallows the reply to the script call
 * and cuts the connection after Redis ran it, so ioredis resends the same call on reconnect.
 * The second run must leave the counts the first did.
 */
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { createRedis, parseRedisOptions, type Redis } from '@herald/redis';
import { RedisServer, ReplyLossProxy, scriptCall, uniquePrefix } from '@herald/testkit';
import { loadLimitScripts, TenantLimits } from '../src/index.js';

const scripts = loadLimitScripts();
const script = (name: string) => scripts.get(name) as { sha: string; source: string };

let server: RedisServer;
let proxy: ReplyLossProxy;
let client: Redis;
before(async () => {
  server = await RedisServer.start();
  proxy = await ReplyLossProxy.start({ port: server.port });
  client = createRedis(parseRedisOptions(proxy.url, { connectionName: 'limits-resend' })) as Redis;
});
after(async () => {
  client.disconnect();
  await proxy.close();
  await server.destroy();
});

const limitsOn = (defaults: ConstructorParameters<typeof TenantLimits>[0]['defaults']) =>
  new TenantLimits({ redis: client, prefix: uniquePrefix('limits-resend'), defaults, nodeId: 'node-a' });

test('a rate take whose reply was lost is resent and takes once', async () => {
  const limits = limitsOn({ push: 3 });
  const lost = proxy.loseNextReply(scriptCall(script('rate-take')));
  assert.equal(await limits.takeRate('push', new Map([['acme', 2]])), undefined);
  await lost;
  // Two of three taken, not four: one unit is left.
  assert.equal(await limits.takeRate('push', new Map([['acme', 1]])), undefined);
  assert.ok(await limits.takeRate('push', new Map([['acme', 1]])));
});

test('a slot acquire and a release whose replies were lost are resent and count once', async () => {
  const limits = limitsOn({ subscriptions: 2 });
  const lostAcquire = proxy.loseNextReply(scriptCall(script('slot-acquire')));
  const first = await limits.acquireSlot('subscriptions', 'alice');
  await lostAcquire;
  assert.ok(first && 'release' in first);
  const second = await limits.acquireSlot('subscriptions', 'alice');
  assert.ok(second && 'release' in second, 'the resent acquire took a second slot');
  assert.ok(
    await limits.acquireSlot('subscriptions', 'alice').then((answer) => answer && !('release' in answer)),
  );
  const lostRelease = proxy.loseNextReply(scriptCall(script('slot-release')));
  first.release();
  await lostRelease;
  await limits.renew();
  // One slot given back, once: one free, then none.
  assert.ok(
    await limits.acquireSlot('subscriptions', 'alice').then((answer) => answer && 'release' in answer),
  );
  assert.ok(
    await limits.acquireSlot('subscriptions', 'alice').then((answer) => answer && !('release' in answer)),
  );
  await limits.stop();
});

test('in-flight reserve, settle and ack whose replies were lost are resent and count once', async () => {
  const limits = limitsOn({ inflight: 3 });
  const lostReserve = proxy.loseNextReply(scriptCall(script('inflight-reserve')));
  assert.deepEqual(await limits.reserveInFlight('acme', 'lease-1', 2), { granted: 2 });
  await lostReserve;
  const lostSettle = proxy.loseNextReply(scriptCall(script('inflight-settle')));
  await limits.settleInFlight('acme', 'lease-1', 2, Date.now() + 60_000, [{ partitionId: 'p1', group: 'g' }]);
  await lostSettle;
  assert.deepEqual(await limits.reserveInFlight('acme', 'lease-2', 5), { granted: 1 });
  await limits.settleInFlight('acme', 'lease-2', 0, 0, []);
  const lostAck = proxy.loseNextReply(scriptCall(script('inflight-ack')));
  await limits.ackInFlight([{ partitionId: 'p1', group: 'g', transactionId: 't1' }]);
  await lostAck;
  // One message acknowledged, once: two slots free (one never used, one freed), not three.
  assert.deepEqual(await limits.reserveInFlight('acme', 'lease-3', 5), { granted: 2 });
});

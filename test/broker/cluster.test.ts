/* Two broker processes on one Redis: any node serves any request. */
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { stopTestRedis, testRedisUrl, uniquePrefix, waitFor } from '@herald/testkit';
import { BrokerNode, call } from './nodes.js';

let a: BrokerNode;
let b: BrokerNode;

before(async () => {
  const environment = { REDIS_URL: await testRedisUrl(), BROKER_KEY_PREFIX: uniquePrefix('cluster') };
  [a, b] = await Promise.all([BrokerNode.start(environment), BrokerNode.start(environment)]);
});
after(async () => {
  await Promise.all([a?.stop(), b?.stop()]);
  await stopTestRedis();
});

test('a message pushed on node A is popped on node B', async () => {
  const pushed = await call(a.url, 'POST', '/api/v1/push', {
    items: [{ queue: 'cl.one', payload: { via: 'A' } }],
  });
  assert.equal(pushed.status, 201);
  const popped = await call(b.url, 'GET', '/api/v1/pop/queue/cl.one');
  assert.equal(popped.status, 200);
  assert.deepEqual(popped.body.messages[0].data, { via: 'A' });
});

test('a long-poll parked on node B wakes when node A receives a push', async () => {
  const waiting = call(b.url, 'GET', '/api/v1/pop/queue/cl.wake?wait=true&timeout=20000');
  await waitFor(async () => (await call(b.url, 'GET', '/api/v1/status')).body.parkedLongPolls === 1, {
    what: 'parked pop on B',
  });
  await call(a.url, 'POST', '/api/v1/push', { items: [{ queue: 'cl.wake', payload: 'ping' }] });
  const reply = await waiting;
  assert.equal(reply.status, 200);
  assert.equal(reply.body.messages[0].data, 'ping');
});

test('one push wakes one of the pops parked across both nodes; the others keep waiting', async () => {
  const parkedOn = async (url: string) => (await call(url, 'GET', '/api/v1/status')).body.parkedLongPolls;
  const parked = (url: string, count: number) =>
    waitFor(async () => (await parkedOn(url)) === count, { what: `${count} parked pops on ${url}` });
  // The longest a pop may wait (LIMITS.maxTimeoutMs): an answer is a wake-up, never a timeout.
  const timeout = 600_000;
  const abandon = new AbortController();
  const waiters = [b, b, a].map((node) =>
    call(
      node.url,
      'GET',
      `/api/v1/pop/queue/cl.herd?wait=true&timeout=${timeout}`,
      undefined,
      abandon.signal,
    ).catch(() => undefined),
  );
  await Promise.all([parked(b.url, 2), parked(a.url, 1)]);
  await call(a.url, 'POST', '/api/v1/push', { items: [{ queue: 'cl.herd', payload: 'once' }] });
  const first = await Promise.race(waiters);
  assert.equal(first?.status, 200);
  assert.equal(first?.body.messages[0].data, 'once');
  assert.equal((await parkedOn(a.url)) + (await parkedOn(b.url)), 2, 'the two others still wait');
  // The others end when their clients go away (a pop whose client left leases nothing).
  abandon.abort();
  await Promise.all([parked(a.url, 0), parked(b.url, 0)]);
  assert.equal(
    (await call(a.url, 'GET', '/api/v1/pop/queue/cl.herd')).status,
    204,
    'nothing left to deliver',
  );
});

test('a partition leased through node A is not handed out by node B until acked', async () => {
  await call(a.url, 'POST', '/api/v1/push', {
    items: [
      { queue: 'cl.lease', payload: 1, transactionId: 'l1' },
      { queue: 'cl.lease', payload: 2, transactionId: 'l2' },
    ],
  });
  const first = await call(a.url, 'GET', '/api/v1/pop/queue/cl.lease');
  assert.equal(first.status, 200);
  assert.equal((await call(b.url, 'GET', '/api/v1/pop/queue/cl.lease')).status, 204);
  assert.equal((await call(b.url, 'GET', '/api/v1/pop/queue/cl.lease/partition/Default')).status, 204);
  const message = first.body.messages[0];
  const acked = await call(b.url, 'POST', '/api/v1/ack', {
    transactionId: message.transactionId,
    partitionId: message.partitionId,
    leaseId: message.leaseId,
  });
  assert.equal(acked.body[0].success, true);
  const second = await call(b.url, 'GET', '/api/v1/pop/queue/cl.lease');
  assert.equal(second.body.messages[0].transactionId, 'l2');
  const extended = await call(a.url, 'POST', `/api/v1/lease/${second.body.leaseId}/extend`, { seconds: 120 });
  assert.equal(extended.body[0].success, true, 'a lease taken on B can be extended on A');
});

test('a queue deleted on node A and pushed again on node B is registered again (listed, maintained)', async () => {
  const queue = 'cl.reborn';
  const listed = async (url: string) =>
    ((await call(url, 'GET', '/api/v1/resources/queues')).body.queues as { name: string }[]).some(
      (entry) => entry.name === queue,
    );
  assert.equal((await call(b.url, 'POST', '/api/v1/push', { items: [{ queue, payload: 1 }] })).status, 201);
  assert.equal((await call(a.url, 'DELETE', `/api/v1/resources/queues/${queue}`)).status, 200);
  assert.equal(await listed(a.url), false);
  // B remembered the queue as registered; the deletion on A must make it write it again.
  await waitFor(
    async () => {
      assert.equal(
        (await call(b.url, 'POST', '/api/v1/push', { items: [{ queue, payload: 2 }] })).status,
        201,
      );
      return listed(a.url);
    },
    { what: 'the queue to be listed again after a push on B' },
  );
});

/*
 * Scripts are resend-safe (issue #9, defects 1 and 2; shared/redis/README.md): ioredis resends
 * a command whose reply was lost, so every state-changing script may run twice. A reply-loss
 * proxy between the broker and a private Redis swallows one script reply and cuts the
 * connection; the resent script must give the client the first run's outcome.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { KeyClock } from '@herald/redis';
import { RedisServer, ReplyLossProxy, scriptCall, uniquePrefix } from '@herald/testkit';
import { Redis } from 'ioredis';
import type { Broker } from '../src/index.js';
import { loadBrokerScripts } from '../src/scripts.js';
import { QUEUE_MODE } from '../src/storage.js';
import { client, queueName, startTestBroker } from './helpers.js';

// The scripts as this test's broker runs them: on a clock the test moves (StartOptions.clock).
const scripts = loadBrokerScripts({ clock: 'key' });
function script(name: string) {
  const found = scripts.get(name);
  if (!found) throw new Error(`no script ${name}`);
  return scriptCall(found);
}

describe('broker scripts under a lost reply (redis)', () => {
  let server: RedisServer;
  let proxy: ReplyLossProxy;
  let broker: Broker;
  let api: ReturnType<typeof client>;
  /** The broker's clock, written straight to Redis (not through the proxy). */
  let clockConnection: Redis;
  let clock: KeyClock;
  const prefix = uniquePrefix('resend');
  before(async () => {
    server = await RedisServer.start();
    proxy = await ReplyLossProxy.start({ port: server.port });
    clockConnection = new Redis(server.url);
    clock = new KeyClock(Date.now(), clockConnection);
    broker = await startTestBroker(
      'redis',
      {
        REDIS_URL: proxy.url,
        BROKER_KEY_PREFIX: prefix,
        BROKER_LEASE_SWEEP_INTERVAL: '200',
        QUEEN_ENCRYPTION_KEY: '33'.repeat(32),
      },
      clock,
    );
    api = client(broker.url);
  });
  after(async () => {
    await broker.close();
    clockConnection.disconnect();
    await proxy.close();
    await server.destroy();
  });

  /** A fresh queue name whose scripts read the test's clock. */
  async function queueOnClock(label: string): Promise<string> {
    const queue = queueName(label);
    await clock.track([`${prefix}{${encodeURIComponent(queue)}}:`]);
    return queue;
  }

  async function dlqTotal(queue: string): Promise<number> {
    return (await api.call('GET', `/api/v1/dlq?queue=${encodeURIComponent(queue)}`)).body.total;
  }

  test('pop: the resent script returns the leased messages (no lease nobody holds, no attempt charged)', async () => {
    const queue = await queueOnClock('resend-pop');
    await api.configure(queue, { retryLimit: 0, leaseTime: 60 });
    await api.push(
      ['a', 'b', 'c'].map((transactionId) => ({ queue, payload: transactionId, transactionId })),
    );
    const lost = proxy.loseNextReply(script('pop'));
    const popped = await api.pop(queue, 'batch=3');
    await lost;
    assert.equal(popped.status, 200, 'the messages reach the client');
    assert.deepEqual(
      popped.body.messages.map((m: any) => [m.transactionId, m.retryCount]),
      [
        ['a', 0],
        ['b', 0],
        ['c', 0],
      ],
    );
    // The lease index came with the pop (its script writes it on standalone): the lease extends.
    const leaseId = popped.body.messages[0].leaseId;
    const extended = await api.call('POST', `/api/v1/lease/${leaseId}/extend`, { seconds: 120 });
    assert.equal(extended.body[0].success, true, JSON.stringify(extended.body));
    const acks = await api.ackBatch({
      acknowledgments: popped.body.messages.map((m: any) => ({
        transactionId: m.transactionId,
        partitionId: m.partitionId,
        leaseId: m.leaseId,
      })),
    });
    assert.deepEqual(
      acks.body.map((r: any) => [r.success, r.repeat, r.leaseReleased]),
      [
        [true, false, false],
        [true, false, false],
        [true, false, true],
      ],
    );
    assert.equal(await dlqTotal(queue), 0, 'retryLimit 0: nothing dead-lettered undelivered');
    assert.equal((await api.pop(queue)).status, 204);
  });

  test('pop of several partitions: the resent script returns every partition of the lease', async () => {
    const queue = await queueOnClock('resend-pop-wide');
    await api.configure(queue, { leaseTime: 60 });
    await api.push([
      { queue, partition: 'p1', payload: 1, transactionId: 'x1' },
      { queue, partition: 'p2', payload: 2, transactionId: 'x2' },
    ]);
    const lost = proxy.loseNextReply(script('pop'));
    const popped = await api.pop(queue, 'batch=10&partitions=2');
    await lost;
    assert.equal(popped.status, 200);
    assert.deepEqual(popped.body.messages.map((m: any) => m.transactionId).sort(), ['x1', 'x2']);
    assert.equal(new Set(popped.body.messages.map((m: any) => m.leaseId)).size, 1);
  });

  const ackCases = [
    { status: 'completed', retryLimit: 3, dlq: false, redelivered: null },
    { status: 'failed', retryLimit: 3, dlq: false, redelivered: 1 },
    { status: 'failed', retryLimit: 0, dlq: true, redelivered: null },
  ] as const;
  for (const { status, retryLimit, dlq, redelivered } of ackCases) {
    test(`ack ${status} (retryLimit ${retryLimit}): the resent script answers success once applied`, async () => {
      const queue = await queueOnClock('resend-ack');
      await api.configure(queue, { retryLimit, leaseTime: 60 });
      await api.push([{ queue, payload: 1, transactionId: 'm' }]);
      const message = (await api.pop(queue)).body.messages[0];
      const lost = proxy.loseNextReply(script('ack'));
      const reply = await api.ack({
        transactionId: 'm',
        partitionId: message.partitionId,
        leaseId: message.leaseId,
        status,
      });
      await lost;
      assert.deepEqual(
        [reply.body[0].success, reply.body[0].error, reply.body[0].repeat, reply.body[0].dlq],
        [true, null, true, dlq],
      );
      const next = await api.pop(queue);
      if (redelivered === null) assert.equal(next.status, 204);
      else assert.equal(next.body.messages[0].retryCount, redelivered, 'one attempt counted, not two');
      assert.equal(await dlqTotal(queue), dlq ? 1 : 0);
    });
  }

  test('batch ack: the resent script answers every item as applied', async () => {
    const queue = await queueOnClock('resend-batch');
    await api.push(['a', 'b'].map((transactionId) => ({ queue, payload: transactionId, transactionId })));
    const popped = (await api.pop(queue, 'batch=2')).body;
    const lost = proxy.loseNextReply(script('ack'));
    const reply = await api.ackBatch({
      acknowledgments: ['a', 'b'].map((transactionId) => ({
        transactionId,
        partitionId: popped.partitionId,
        leaseId: popped.leaseId,
      })),
    });
    await lost;
    assert.deepEqual(
      reply.body.map((r: any) => [r.success, r.error]),
      [
        [true, null],
        [true, null],
      ],
    );
    assert.equal((await api.pop(queue)).status, 204);
  });

  test('transaction: the resent script commits (its push answered queued, stored once)', async () => {
    const source = await queueOnClock('resend-src');
    const target = await queueOnClock('resend-dst');
    await api.push([{ queue: source, payload: 'in', transactionId: 's1' }]);
    const message = (await api.pop(source)).body.messages[0];
    const lost = proxy.loseNextReply(script('transaction'));
    const reply = await api.call('POST', '/api/v1/transaction', {
      operations: [
        { type: 'push', items: [{ queue: target, payload: 'out', transactionId: 'o1' }] },
        { type: 'ack', transactionId: 's1', partitionId: message.partitionId, leaseId: message.leaseId },
      ],
    });
    await lost;
    assert.equal(reply.body.success, true, JSON.stringify(reply.body));
    assert.equal(reply.body.results[0].status, 'queued');
    assert.equal(reply.body.results[1].success, true);
    assert.equal((await api.pop(target, 'batch=10')).body.messages.length, 1);
    assert.equal((await api.pop(source)).status, 204);
  });

  test('push: the resent script answers queued, not duplicate, and stores once', async () => {
    const queue = await queueOnClock('resend-push');
    const lost = proxy.loseNextReply(script('push'));
    const reply = await api.push([
      { queue, payload: 1, transactionId: 'p1' },
      { queue, payload: 2, transactionId: 'p2' },
    ]);
    await lost;
    assert.deepEqual(
      reply.body.map((r: any) => r.status),
      ['queued', 'queued'],
    );
    assert.equal((await api.pop(queue, 'batch=10')).body.messages.length, 2);
  });

  test('push refused as clear for a queue encrypted meanwhile: the resent refusal writes nothing, the sealed retry stores once', async () => {
    const queue = await queueOnClock('resend-sealed');
    const first = await api.push([{ queue, payload: 'clear', transactionId: 'c' }]);
    // Turned on as another node would: this node still believes the option is off.
    await broker.storage.catalog.configure(queue, { encryptionEnabled: true }, { namespace: '', task: '' });
    const lost = proxy.loseNextReply(script('push'));
    const reply = await api.push([{ queue, payload: { v: 'secret-value' }, transactionId: 's' }]);
    await lost;
    assert.equal(reply.status, 201, JSON.stringify(reply.body));
    assert.equal(reply.body[0].status, 'queued');
    const raw = await broker.storage.messages.get(first.body[0].partition_id, 's');
    assert.doesNotMatch(JSON.stringify(raw?.data), /secret-value/);
    assert.deepEqual(
      (await api.pop(queue, 'batch=10')).body.messages.map((m: any) => m.data),
      ['clear', { v: 'secret-value' }],
    );
  });

  test('lease extension: the resent script still extends', async () => {
    const queue = await queueOnClock('resend-extend');
    await api.configure(queue, { leaseTime: 30 });
    await api.push([{ queue, payload: 1 }]);
    const popped = (await api.pop(queue)).body;
    const lost = proxy.loseNextReply(script('extend-lease'));
    const reply = await api.call('POST', `/api/v1/lease/${popped.leaseId}/extend`, { seconds: 120 });
    await lost;
    assert.equal(reply.body[0].success, true);
    assert.ok(Date.parse(reply.body[0].expiresAt) > Date.parse(popped.messages[0].leaseExpiresAt ?? 0));
  });

  test('queue deletion: a resent script still drops the partition ids from the global index', async () => {
    const queue = await queueOnClock('resend-delete');
    const pushed = await api.push([{ queue, partition: 'p', payload: 1 }]);
    const partitionId = pushed.body[0].partition_id ?? pushed.body[0].partitionId;
    const direct = new Redis(server.url);
    try {
      assert.ok(await direct.hget(`${prefix}pid`, partitionId), 'indexed after the push');
      const lost = proxy.loseNextReply(script('delete-queue'));
      const reply = await api.call('DELETE', `/api/v1/resources/queues/${encodeURIComponent(queue)}`);
      await lost;
      assert.ok(reply.status < 300, String(reply.status));
      assert.equal(await direct.hget(`${prefix}pid`, partitionId), null);
    } finally {
      direct.disconnect();
    }
  });

  test('message deletion: the resent script still answers deleted, not "not found"', async () => {
    const queue = await queueOnClock('resend-delmsg');
    const pushed = await api.push([{ queue, payload: 1, transactionId: 'gone' }]);
    const partitionId = pushed.body[0].partition_id ?? pushed.body[0].partitionId;
    const lost = proxy.loseNextReply(script('delete-message'));
    const reply = await api.call('DELETE', `/api/v1/messages/${partitionId}/gone`);
    await lost;
    assert.equal(reply.status, 200);
    assert.equal(reply.body.success, true, JSON.stringify(reply.body));
    assert.equal((await api.pop(queue)).status, 204);
  });

  test('group deletion: the resent script still answers deleted, not "not found"', async () => {
    const queue = await queueOnClock('resend-delgroup');
    await api.push([{ queue, payload: 1 }]);
    assert.equal((await api.pop(queue, 'consumerGroup=g1')).status, 200);
    const lost = proxy.loseNextReply(script('delete-group'));
    const reply = await api.call('DELETE', `/api/v1/consumer-groups/g1/queues/${encodeURIComponent(queue)}`);
    await lost;
    assert.equal(reply.status, 200, JSON.stringify(reply.body));
    assert.equal(reply.body.deletedPartitions, 1, JSON.stringify(reply.body));
  });

  test('seek: the resent script moves the group to the same place', async () => {
    const queue = await queueOnClock('resend-seek');
    await api.push([
      { queue, payload: 1 },
      { queue, payload: 2 },
    ]);
    const lost = proxy.loseNextReply(script('seek'));
    const reply = await api.call(
      'POST',
      `/api/v1/consumer-groups/g2/queues/${encodeURIComponent(queue)}/seek`,
      {
        toEnd: true,
      },
    );
    await lost;
    assert.ok(reply.status < 300, `${reply.status} ${JSON.stringify(reply.body)}`);
    assert.equal((await api.pop(queue, 'consumerGroup=g2')).status, 204, 'at the end: nothing to read');
  });

  test('dead-letter requeue: the resent script answers the count the first run requeued', async () => {
    const queue = await queueOnClock('resend-requeue');
    await api.configure(queue, { retryLimit: 0 });
    await api.push([{ queue, payload: 1, transactionId: 'dead' }]);
    const message = (await api.pop(queue)).body.messages[0];
    await api.ack({ ...message, status: 'failed' });
    const [letter] = (await api.call('GET', `/api/v1/dlq?queue=${encodeURIComponent(queue)}`)).body.messages;
    const lost = proxy.loseNextReply(script('requeue-dlq'));
    const reply = await api.call('POST', '/api/v1/dlq/requeue', { queue, dlqIds: [letter.dlqId] });
    await lost;
    assert.equal(reply.body.requeued, 1, JSON.stringify(reply.body));
    assert.equal(await dlqTotal(queue), 0);
    assert.deepEqual(
      (await api.pop(queue, 'batch=10')).body.messages.map((m: any) => m.transactionId),
      ['dead'],
      'requeued once',
    );
  });

  test('lease sweep: the resent script counts one attempt for an expired lease, not two', async () => {
    const queue = await queueOnClock('resend-sweep');
    await api.configure(queue, { leaseTime: 1, retryLimit: 5 });
    await api.push([{ queue, payload: 1, transactionId: 'slow' }]);
    assert.equal((await api.pop(queue)).status, 200);
    // Past the lease: a sweep that reaches Redis from now on (after the clock's write) has an
    // attempt to count.
    await clock.advance(1001);
    await proxy.loseNextReply(script('sweep-leases'));
    const again = await api.pop(queue);
    assert.equal(again.status, 200);
    assert.equal(again.body.messages[0].retryCount, 1);
  });

  test('release: the resent script gives the lease back once and counts no attempt', async () => {
    const queue = await queueOnClock('resend-release');
    await api.push([{ queue, payload: 1, transactionId: 'unsent' }]);
    const result = await broker.storage.queues.pop({
      queue,
      partition: undefined,
      group: QUEUE_MODE,
      batch: 1,
      maxPartitions: 1,
      leaseId: 'lease-of-a-client-gone',
      subscription: { mode: 'all' },
    });
    assert.equal(result.partitions.length, 1);
    const lost = proxy.loseNextReply(script('release'));
    await broker.storage.queues.release(result, QUEUE_MODE);
    await lost;
    const again = await api.pop(queue);
    assert.equal(again.status, 200);
    assert.equal(again.body.messages[0].retryCount, 0);
  });

  test('seek and retention: resent scripts count a group backlog (maxSize) once', async () => {
    const queue = await queueOnClock('resend-retention');
    await api.configure(queue, { maxSize: 3, maxWaitTimeSeconds: 1 });
    assert.equal((await api.pop(queue, 'consumerGroup=g')).status, 204, 'the group exists first');
    await api.push([1, 2, 3].map((n) => ({ queue, payload: n, transactionId: `m${n}` })));
    // g resolves 2 of 3; a seek resent moves g back to the start once (backlog 3, not 4).
    assert.equal((await api.pop(queue, 'consumerGroup=g&batch=2&autoAck=true')).body.messages.length, 2);
    const seekLost = proxy.loseNextReply(script('seek'));
    const seek = await api.call(
      'POST',
      `/api/v1/consumer-groups/g/queues/${encodeURIComponent(queue)}/seek`,
      {
        timestamp: 0,
      },
    );
    await seekLost;
    assert.equal(seek.status, 200);
    assert.equal((await api.push([{ queue, payload: 'over' }])).status, 429, 'backlog 3 again');
    // Past maxWaitTimeSeconds the three waiting messages are evicted by a resent script.
    await clock.advance(1001);
    const lost = proxy.loseNextReply(script('retention'));
    await broker.storage.housekeeping.applyRetention();
    await lost;
    const partitionId = (await api.push([{ queue, payload: 4, transactionId: 'm4' }])).body[0].partition_id;
    assert.equal((await api.call('GET', `/api/v1/messages/${partitionId}/m1`)).status, 404, 'evicted');
    // Evicted once: the backlog is m4 alone, so two more fit and a third does not (a double
    // count would have left room for more).
    assert.equal((await api.push([5, 6].map((n) => ({ queue, payload: n })))).status, 201);
    assert.equal((await api.push([{ queue, payload: 'over' }])).status, 429);
  });
});

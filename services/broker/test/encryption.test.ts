/*
 * Payload encryption (`encryptionEnabled`, docs/broker-encryption.md "Payload encryption") over HTTP, on
 * both backends: what clients see is their payload, what storage holds is an AES-256-GCM
 * envelope, and every queue feature keeps working on encrypted messages.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { stopTestRedis, testRedisUrl, uniquePrefix } from '@herald/testkit';
import { Redis } from 'ioredis';
import { PayloadCipher } from '../src/encryption.js';
import type { Broker } from '../src/index.js';
import { BACKENDS, brokerSuite, client, queueFamily, queueName, startTestBroker } from './helpers.js';

after(() => stopTestRedis());

const KEY = '11'.repeat(32);
const OTHER_KEY = '22'.repeat(32);
/** A string the tests look for in storage: present in clear means not encrypted. */
const SECRET = 'card-4111-1111-1111-1111';

const path = (queue: string) => encodeURIComponent(queue);
const sealedFor = (key: string) => new PayloadCipher(Buffer.from(key, 'hex'));

/** Every value stored under a key prefix, read by type (not DUMP: its LZF compression hides text). */
async function storedText(redis: Redis, prefix: string): Promise<string> {
  const parts: string[] = [];
  let cursor = '0';
  do {
    const [next, keys] = await redis.scan(cursor, 'MATCH', `${prefix}*`, 'COUNT', 1000);
    cursor = next;
    for (const key of keys) {
      const type = await redis.type(key);
      if (type === 'stream') parts.push(JSON.stringify(await redis.xrange(key, '-', '+')));
      else if (type === 'hash') parts.push(JSON.stringify(await redis.hgetall(key)));
      else if (type === 'string') parts.push((await redis.get(key)) ?? '');
      else if (type === 'list') parts.push(JSON.stringify(await redis.lrange(key, 0, -1)));
      else if (type === 'set') parts.push(JSON.stringify(await redis.smembers(key)));
      else if (type === 'zset') parts.push(JSON.stringify(await redis.zrange(key, 0, -1)));
    }
  } while (cursor !== '0');
  return parts.join('\n');
}

for (const backend of BACKENDS) {
  describe(`broker payload encryption (${backend})`, () => {
    let broker: Broker;
    let api: ReturnType<typeof client>;
    const prefix = uniquePrefix('encryption');
    before(async () => {
      broker = await startTestBroker(backend, {
        QUEEN_ENCRYPTION_KEY: KEY,
        ...(backend !== 'memory' ? { BROKER_KEY_PREFIX: prefix } : {}),
      });
      api = client(broker.url);
    });
    after(() => broker.close());

    /** The payload as storage holds it, without the broker's decryption. */
    const stored = async (partitionId: string, transactionId: string) =>
      (await broker.storage.messages.get(partitionId, transactionId))?.data;

    test('a streams cycle seals its sink pushes to an encrypted queue', async () => {
      const queue = queueFamily('enc-st');
      const sink = queue('sink');
      await api.configure(sink, { encryptionEnabled: true });
      const registered = await api.call('POST', '/streams/v1/queries', {
        name: queueName('enc-query'),
        source_queue: queue('source'),
        sink_queue: sink,
        config_hash: 'h',
      });
      assert.equal(registered.status, 200, JSON.stringify(registered.body));
      const cycled = await api.call('POST', '/streams/v1/cycle', {
        query_id: registered.body.query_id,
        partition_id: 'p',
        push_items: [{ queue: sink, payload: { card: SECRET }, transactionId: 'sunk' }],
      });
      assert.equal(cycled.body.success, true, JSON.stringify(cycled.body));
      const [message] = (await api.pop(sink)).body.messages;
      assert.deepEqual(message.data, { card: SECRET });
      const raw = await stored(message.partitionId, 'sunk');
      assert.ok(Object.hasOwn(raw as object, '$herald.enc'), JSON.stringify(raw));
    });

    test('a streams cycle right after the option was turned on elsewhere stores its sink push sealed', async () => {
      const queue = queueFamily('enc-stale');
      const sink = queue('sink');
      const first = await api.push([{ queue: sink, payload: 'clear', transactionId: 'c' }]);
      const partitionId = first.body[0].partition_id;
      // Turned on as another node would: this node cached the option as off a moment ago.
      await broker.storage.catalog.configure(sink, { encryptionEnabled: true }, { namespace: '', task: '' });
      const registered = await api.call('POST', '/streams/v1/queries', {
        name: queueName('enc-stale-query'),
        source_queue: queue('source'),
        sink_queue: sink,
        config_hash: 'h',
      });
      const cycled = await api.call('POST', '/streams/v1/cycle', {
        query_id: registered.body.query_id,
        partition_id: 'p',
        state_ops: [{ type: 'upsert', key: 'k', value: { n: 1 } }],
        push_items: [{ queue: sink, payload: { card: SECRET }, transactionId: 'sunk' }],
      });
      assert.equal(cycled.body.success, true, JSON.stringify(cycled.body));
      assert.equal(cycled.body.state_ops_applied, 1);
      assert.doesNotMatch(JSON.stringify(await stored(partitionId, 'sunk')), new RegExp(SECRET));
      const popped = await api.pop(sink, 'batch=2');
      assert.deepEqual(
        popped.body.messages.map((m: { data: unknown }) => m.data),
        ['clear', { card: SECRET }],
      );
    });

    test('configure with encryptionEnabled answers without a warning; push/pop/ack round trip in clear', async () => {
      const queue = queueName('enc');
      const configured = await api.configure(queue, { encryptionEnabled: true });
      assert.equal(configured.status, 200);
      assert.equal(configured.body.options.encryptionEnabled, true);
      assert.equal(configured.body.warnings, undefined);
      const payload = { card: SECRET, amount: 12.5, nested: { list: [1, 'two', null] } };
      const pushed = await api.push([{ queue, payload, transactionId: 't1' }]);
      assert.equal(pushed.status, 201);
      const popped = await api.pop(queue);
      assert.equal(popped.status, 200);
      const [message] = popped.body.messages;
      assert.deepEqual(message.data, payload);
      const acked = await api.ack({
        transactionId: 't1',
        partitionId: message.partitionId,
        leaseId: message.leaseId,
        status: 'completed',
      });
      assert.equal(acked.body[0].success, true);
      assert.equal((await api.pop(queue)).status, 204);
      // Stored as an envelope, shown in clear by the message routes.
      const raw = await stored(message.partitionId, 't1');
      assert.equal(typeof raw, 'object');
      assert.ok(Object.hasOwn(raw as object, '$herald.enc'), JSON.stringify(raw));
      assert.doesNotMatch(JSON.stringify(raw), new RegExp(SECRET));
      const shown = await api.call('GET', `/api/v1/messages/${message.partitionId}/t1`);
      assert.deepEqual(shown.body.data, payload);
      const listed = await api.call('GET', `/api/v1/messages?queue=${path(queue)}`);
      assert.deepEqual(
        listed.body.messages.map((m: { data: unknown }) => m.data),
        [payload],
      );
    });

    test('awkward payloads come back from an encrypted queue exactly as from a clear one', async () => {
      const payloads: unknown[] = [
        null,
        0,
        -1.5e-300,
        2 ** 53,
        true,
        '',
        'é — 漢字 — 🙂',
        '\ud800 lone surrogate',
        '{"$herald.enc":1}',
        [],
        [{ '$herald.enc': 1 }],
        { a: { b: { c: [1, [2, [3]]] } } },
        { '0': 'integer-like key first', z: 1 },
        'x'.repeat(100_000),
      ];
      const sealed = queueName('enc-awkward');
      const clear = queueName('clear-awkward');
      await api.configure(sealed, { encryptionEnabled: true });
      const items = (queue: string) => payloads.map((payload) => ({ queue, payload }));
      assert.equal((await api.push(items(sealed))).status, 201);
      assert.equal((await api.push(items(clear))).status, 201);
      const data = async (queue: string) =>
        (await api.pop(queue, `batch=${payloads.length}&autoAck=true`)).body.messages.map(
          (m: { data: unknown }) => m.data,
        );
      const fromClear = await data(clear);
      assert.equal(fromClear.length, payloads.length);
      assert.deepEqual(await data(sealed), fromClear);
    });

    test('autoAck pops and batches of several messages come back in clear and in order', async () => {
      const queue = queueName('enc-batch');
      await api.configure(queue, { encryptionEnabled: true });
      await api.push(Array.from({ length: 5 }, (_, i) => ({ queue, payload: { i, s: SECRET } })));
      const popped = await api.pop(queue, 'batch=5&autoAck=true');
      assert.deepEqual(
        popped.body.messages.map((m: { data: unknown }) => m.data),
        Array.from({ length: 5 }, (_, i) => ({ i, s: SECRET })),
      );
      assert.equal((await api.pop(queue)).status, 204);
    });

    test('dedup and maxSize work on encrypted messages', async () => {
      const queue = queueName('enc-dedup');
      await api.configure(queue, { encryptionEnabled: true, maxSize: 2 });
      const first = await api.push([{ queue, payload: SECRET, transactionId: 'same' }]);
      const again = await api.push([{ queue, payload: SECRET, transactionId: 'same' }]);
      assert.equal(first.body[0].status, 'queued');
      assert.equal(again.body[0].status, 'duplicate');
      assert.equal((await api.push([{ queue, payload: 'b' }])).status, 201);
      assert.equal((await api.push([{ queue, payload: 'over' }])).status, 429);
      const popped = await api.pop(queue, 'batch=5');
      assert.deepEqual(
        popped.body.messages.map((m: { data: unknown }) => m.data),
        [SECRET, 'b'],
      );
    });

    test('dead letters list in clear and requeue still encrypted, popping in clear again', async () => {
      const queue = queueName('enc-dlq');
      await api.configure(queue, { encryptionEnabled: true, retryLimit: 0 });
      const pushed = await api.push([{ queue, payload: { s: SECRET }, transactionId: 'd1' }]);
      const partitionId = pushed.body[0].partition_id;
      const popped = (await api.pop(queue)).body.messages[0];
      const dead = await api.ack({
        transactionId: 'd1',
        partitionId,
        leaseId: popped.leaseId,
        status: 'failed',
        error: 'boom',
      });
      assert.equal(dead.body[0].dlq, true);
      const letters = await api.call('GET', `/api/v1/dlq?queue=${path(queue)}`);
      assert.equal(letters.status, 200);
      assert.deepEqual(letters.body.messages[0].data, { s: SECRET });
      const raw = await broker.storage.deadLetters.list({ queue, limit: 10, offset: 0 });
      assert.doesNotMatch(JSON.stringify(raw.messages[0]?.data), new RegExp(SECRET));
      const requeued = await api.call('POST', '/api/v1/dlq/requeue', { queue, all: true });
      assert.equal(requeued.body.requeued, 1);
      assert.doesNotMatch(JSON.stringify(await stored(partitionId, 'd1')), new RegExp(SECRET));
      const again = await api.pop(queue);
      assert.deepEqual(again.body.messages[0].data, { s: SECRET });
    });

    test('a transaction push to an encrypted queue is stored encrypted and pops in clear', async () => {
      const queue = queueName('enc-txn');
      await api.configure(queue, { encryptionEnabled: true });
      const committed = await api.call('POST', '/api/v1/transaction', {
        operations: [{ type: 'push', items: [{ queue, payload: { s: SECRET }, transactionId: 'x1' }] }],
      });
      assert.equal(committed.body.success, true);
      const partitionId = committed.body.results[0].partitionId;
      assert.doesNotMatch(JSON.stringify(await stored(partitionId, 'x1')), new RegExp(SECRET));
      assert.deepEqual((await api.pop(queue)).body.messages[0].data, { s: SECRET });
    });

    test('messages keep their own form when the option changes: clear before, sealed after, both readable', async () => {
      const queue = queueName('enc-toggle');
      const before = await api.push([{ queue, payload: 'before', transactionId: 'b' }]);
      const partitionId = before.body[0].partition_id;
      await api.configure(queue, { encryptionEnabled: true });
      await api.push([{ queue, payload: 'during', transactionId: 'd' }]);
      await api.configure(queue, { encryptionEnabled: false });
      await api.push([{ queue, payload: 'after', transactionId: 'a' }]);
      assert.equal(await stored(partitionId, 'b'), 'before');
      assert.notEqual(await stored(partitionId, 'd'), 'during');
      assert.equal(await stored(partitionId, 'a'), 'after');
      const popped = await api.pop(queue, 'batch=3');
      assert.deepEqual(
        popped.body.messages.map((m: { data: unknown }) => m.data),
        ['before', 'during', 'after'],
      );
    });

    test('a push right after the option was turned on elsewhere is stored sealed (no stale clear text)', async () => {
      const queue = queueName('enc-stale');
      const first = await api.push([{ queue, payload: 'clear', transactionId: 'c' }]);
      const partitionId = first.body[0].partition_id;
      // Turned on as another node would (this node last read the option as off).
      await broker.storage.catalog.configure(queue, { encryptionEnabled: true }, { namespace: '', task: '' });
      const pushed = await api.push([{ queue, payload: { s: SECRET }, transactionId: 's' }]);
      assert.equal(pushed.status, 201);
      assert.equal(pushed.body[0].status, 'queued');
      assert.doesNotMatch(JSON.stringify(await stored(partitionId, 's')), new RegExp(SECRET));
      await broker.storage.catalog.configure(
        queue,
        { encryptionEnabled: false },
        { namespace: '', task: '' },
      );
      await broker.storage.catalog.configure(queue, { encryptionEnabled: true }, { namespace: '', task: '' });
      const txn = await api.call('POST', '/api/v1/transaction', {
        operations: [{ type: 'push', items: [{ queue, payload: { s: SECRET }, transactionId: 't' }] }],
      });
      assert.equal(txn.body.success, true);
      assert.doesNotMatch(JSON.stringify(await stored(partitionId, 't')), new RegExp(SECRET));
      const popped = await api.pop(queue, 'batch=3');
      assert.deepEqual(
        popped.body.messages.map((m: { data: unknown }) => m.data),
        ['clear', { s: SECRET }, { s: SECRET }],
      );
    });

    test('a payload posing as an envelope is refused with 400', async () => {
      const queue = queueName('enc-pose');
      const posed = await api.push([
        { queue, payload: { '$herald.enc': 1, kid: 'x', iv: '', ct: '', tag: '' } },
      ]);
      assert.equal(posed.status, 400);
      assert.match(posed.body.error, /reserved/);
      const asData = await api.push([{ queue, data: { other: 1, '$herald.enc': 1 } }]);
      assert.equal(asData.status, 400);
      // Nested, the member is ordinary data.
      assert.equal((await api.push([{ queue, payload: { inner: { '$herald.enc': 1 } } }])).status, 201);
    });

    test('a message sealed with a key the node lacks: clear 500, leases given back, old keys open it', async () => {
      const queue = queueName('enc-foreign');
      await api.configure(queue, { encryptionEnabled: true, retryLimit: 0 });
      // Written as a node holding OTHER_KEY would have (before a rotation on this node, say).
      const [result] = await broker.storage.queues.push([
        {
          queue,
          partition: 'Default',
          transactionId: 'f1',
          messageId: 'f1-message',
          traceId: null,
          data: sealedFor(OTHER_KEY).seal(queue, JSON.stringify({ s: SECRET })),
          producerSub: null,
        },
      ]);
      const refused = await api.pop(queue);
      assert.equal(refused.status, 500);
      assert.match(refused.body.error, /cannot be decrypted.*key id [0-9a-f]{8}.*QUEEN_ENCRYPTION_OLD_KEYS/);
      // The lease was given back (a held one would answer 204), uncounted (retryLimit 0 would
      // have dead-lettered a counted attempt).
      assert.equal((await api.pop(queue)).status, 500);
      assert.equal((await api.call('GET', `/api/v1/dlq?queue=${path(queue)}`)).body.total, 0);
      const view = await api.call('GET', `/api/v1/messages/${result?.partitionId}/f1`);
      assert.equal(view.status, 500);
      if (backend === 'memory') {
        // One process per in-process store: the retired key is checked on what it stores.
        const rotated = new PayloadCipher(Buffer.from(KEY, 'hex'), [Buffer.from(OTHER_KEY, 'hex')]);
        const raw = await stored(result?.partitionId ?? '', 'f1');
        assert.deepEqual(rotated.openValue(queue, raw), { s: SECRET });
        return;
      }
      const rotated = await startTestBroker(backend, {
        QUEEN_ENCRYPTION_KEY: KEY,
        QUEEN_ENCRYPTION_OLD_KEYS: OTHER_KEY,
        BROKER_KEY_PREFIX: prefix,
      });
      try {
        const popped = await client(rotated.url).pop(queue);
        assert.equal(popped.status, 200);
        assert.deepEqual(popped.body.messages[0].data, { s: SECRET });
        assert.equal(popped.body.messages[0].retryCount, 0);
      } finally {
        await rotated.close();
      }
    });

    test('an envelope moved to another queue or altered does not open', () => {
      const cipher = sealedFor(KEY);
      const sealed = cipher.seal('queue-a', '"x"');
      assert.equal(cipher.openText('queue-a', sealed), '"x"');
      const twice = JSON.parse(cipher.seal('queue-a', '"x"'));
      assert.notEqual(twice.iv, JSON.parse(sealed).iv, 'a fresh IV per message');
      assert.notEqual(twice.ct, JSON.parse(sealed).ct);
      assert.throws(() => cipher.openText('queue-b', sealed), /authentication failed/);
      const envelope = JSON.parse(sealed);
      envelope.ct = Buffer.from('"y"').toString('base64');
      assert.throws(() => cipher.openText('queue-a', JSON.stringify(envelope)), /authentication failed/);
    });
  });

  describe(`broker payload encryption without a key (${backend})`, () => {
    const suite = brokerSuite(backend);

    test('configure with encryptionEnabled is refused with 409 and nothing is stored', async () => {
      const queue = queueName('nokey');
      const refused = await suite.api.configure(queue, { encryptionEnabled: true });
      assert.equal(refused.status, 409);
      assert.match(refused.body.error, /QUEEN_ENCRYPTION_KEY/);
      assert.equal(await suite.broker.storage.catalog.get(queue), undefined);
      assert.equal((await suite.api.configure(queue, { encryptionEnabled: false })).status, 200);
    });

    test('a push to a queue configured for encryption elsewhere is refused (409), never stored in clear', async () => {
      const queue = queueName('nokey-push');
      // As a node holding the key configured it (or this node before a restart without it).
      await suite.broker.storage.catalog.configure(
        queue,
        { encryptionEnabled: true },
        { namespace: '', task: '' },
      );
      const refused = await suite.api.push([{ queue, payload: SECRET }]);
      assert.equal(refused.status, 409);
      assert.match(refused.body.error, /refused rather than stored in clear/);
      const txn = await suite.api.call('POST', '/api/v1/transaction', {
        operations: [{ type: 'push', items: [{ queue, payload: SECRET }] }],
      });
      assert.equal(txn.status, 409);
      assert.deepEqual(await suite.broker.storage.messages.list({ queue, limit: 10 }), []);
    });
  });
}

describe('payload encryption across two nodes (Redis)', () => {
  test('turned on through one node, the next push through the other is sealed', async () => {
    const prefix = uniquePrefix('encryption-nodes');
    const [a, b] = await Promise.all(
      [0, 1].map(() => startTestBroker('redis', { QUEEN_ENCRYPTION_KEY: KEY, BROKER_KEY_PREFIX: prefix })),
    );
    try {
      const queue = queueName('enc-nodes');
      const viaB = client((b as Broker).url);
      const first = await viaB.push([{ queue, payload: 'clear' }]);
      assert.equal(
        (await client((a as Broker).url).configure(queue, { encryptionEnabled: true })).status,
        200,
      );
      const pushed = await viaB.push([{ queue, payload: { s: SECRET }, transactionId: 's' }]);
      assert.equal(pushed.status, 201);
      const raw = await (a as Broker).storage.messages.get(first.body[0].partition_id, 's');
      assert.doesNotMatch(JSON.stringify(raw?.data), new RegExp(SECRET));
    } finally {
      await Promise.all([a?.close(), b?.close()]);
    }
  });
});

describe('stored bytes in Redis', () => {
  test('an encrypted queue leaves no clear payload in any key; a clear queue does (the check can fail)', async () => {
    const prefix = uniquePrefix('encryption-bytes');
    // Standalone whatever HERALD_TEST_TOPOLOGY says: the test reads every key of that one server.
    const url = await testRedisUrl();
    const broker = await startTestBroker('redis', {
      REDIS_URL: url,
      QUEEN_ENCRYPTION_KEY: KEY,
      BROKER_KEY_PREFIX: prefix,
    });
    const redis = new Redis(url);
    try {
      const api = client(broker.url);
      const sealed = queueName('sealed');
      await api.configure(sealed, { encryptionEnabled: true, retryLimit: 0 });
      await api.push([{ queue: sealed, payload: { s: SECRET }, transactionId: 's1' }]);
      await api.push([{ queue: sealed, payload: { s: SECRET }, transactionId: 's2' }]);
      const popped = (await api.pop(sealed)).body.messages[0];
      await api.ack({ ...popped, status: 'failed', error: 'to the DLQ' });
      assert.doesNotMatch(await storedText(redis, prefix), new RegExp(SECRET));
      const clear = queueName('clear');
      await api.push([{ queue: clear, payload: { s: SECRET } }]);
      assert.match(await storedText(redis, prefix), new RegExp(SECRET));
    } finally {
      redis.disconnect();
      await broker.close();
    }
  });
});

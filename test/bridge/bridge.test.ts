/*
 * The outbox and the queue -> topic bridge (issue #25 items 1 and 2; docs/broker-outbox.md): a
 * broker relays what its scripts recorded to a hub over the Mercure protocol. Each message of a
 * bridged queue becomes one hub update (pushed, completed, or both), with an id derived from the
 * message, in partition order; a transaction's `publish` operation becomes an update only when
 * the transaction commits. Under lost Redis replies each still becomes exactly one update.
 *
 * The hub runs with MERCURE_DEV so the broker's loopback HTTP counts as secure (production uses
 * the hub's HTTPS URL).
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { type Broker, brokerSpec, loadBrokerScripts, startBroker } from '@herald/broker';
import { parseEnv } from '@herald/config';
import {
  freePort,
  RedisServer,
  ReplyLossProxy,
  scriptCall,
  testRedisEnvironment,
  uniquePrefix,
  waitFor,
} from '@herald/testkit';
import {
  PUBLISHER_SECRET,
  publishOk,
  SseStream,
  type SseStream as Stream,
  startTestHub,
  subscriberToken,
  subscribeUrl,
  type TestHub,
} from '../../services/hub/test/helpers.js';
import { call } from '../broker/nodes.js';

interface BridgeData {
  queue: string;
  partition: string;
  messageId: string;
  transactionId: string;
  event: string;
  group?: string;
  data: unknown;
}

async function startBridgeBroker(environment: Record<string, string>): Promise<Broker> {
  return startBroker(
    parseEnv(brokerSpec, {
      PORT: '0',
      HOST: '127.0.0.1',
      LOG_LEVEL: 'silent',
      BROKER_RETENTION_INTERVAL: '60000',
      BROKER_STATS_INTERVAL: '60000',
      SHUTDOWN_TIMEOUT: '2000',
      BROKER_HUB_JWT_KEY: PUBLISHER_SECRET,
      ...environment,
    }),
    { fastify: { logger: false } },
  );
}

/** Every update of these topics in the hub's history, replayed from the earliest. */
async function history(hub: TestHub, topics: string[], count: number, token?: string): Promise<Stream> {
  const stream = await SseStream.open(
    subscribeUrl(hub.url, [
      ...topics.map((topic): [string, string] => ['match', topic]),
      ['lastEventID', 'earliest'],
    ]),
    token ? { authorization: `Bearer ${token}` } : {},
  );
  await waitFor(() => stream.events.length >= count, { what: `${count} updates`, timeoutMs: 20_000 });
  return stream;
}

/** The broker's outbox status row of a queue (GET /api/v1/outbox). */
async function outboxRow(broker: Broker, queue: string) {
  const status = await call(broker.url, 'GET', '/api/v1/outbox');
  assert.equal(status.status, 200);
  return (status.body.outboxes as { queue: string; pending: number; refused: number }[]).find(
    (row) => row.queue === queue,
  );
}

const dataOf = (stream: Stream) => stream.events.map((event) => JSON.parse(event.data) as BridgeData);

describe('the queue -> topic bridge and transaction publishes (redis)', () => {
  let hub: TestHub;
  let broker: Broker;
  let plain: Broker;
  before(async () => {
    hub = await startTestHub('redis', { MERCURE_DEV: 'true', MERCURE_ANONYMOUS: 'true' });
    const redis = await testRedisEnvironment();
    broker = await startBridgeBroker({
      ...redis,
      BROKER_KEY_PREFIX: uniquePrefix('bridge'),
      BROKER_HUB_URL: hub.url,
    });
    plain = await startBridgeBroker({
      ...redis,
      BROKER_KEY_PREFIX: uniquePrefix('bridge-plain'),
      BROKER_HUB_JWT_KEY: '',
    });
  });
  after(async () => {
    await broker.close();
    await plain.close();
    await hub.close();
  });

  test('each pushed message becomes one update, with its id, in its partition order', async () => {
    const queue = `orders-${uniquePrefix('q')}`;
    const configured = await call(broker.url, 'POST', '/api/v1/configure', {
      queue,
      options: { bridgeTopic: 'https://example.com/queues/{queue}/{partition}' },
    });
    assert.equal(configured.status, 200, JSON.stringify(configured.body));
    assert.equal(configured.body.options.bridgeTopic, 'https://example.com/queues/{queue}/{partition}');
    const items = Array.from({ length: 40 }, (_, index) => ({
      queue,
      partition: index % 2 === 0 ? 'east' : 'west side',
      payload: { n: index },
    }));
    const pushed = await call(broker.url, 'POST', '/api/v1/push', { items });
    assert.equal(pushed.status, 201);
    const topicOf = (partition: string) =>
      `https://example.com/queues/${encodeURIComponent(queue)}/${encodeURIComponent(partition)}`;
    const stream = await history(hub, [topicOf('east'), topicOf('west side')], 40);
    const updates = dataOf(stream);
    const pushedIds = (pushed.body as { message_id: string }[]).map((result) => result.message_id);
    assert.deepEqual(
      stream.events.map((event) => event.id).sort(),
      pushedIds.map((id) => `urn:herald:pushed:${id}`).sort(),
    );
    for (const partition of ['east', 'west side']) {
      const numbers = updates
        .filter((update) => update.partition === partition)
        .map((update) => (update.data as { n: number }).n);
      const expected = items.flatMap((item, index) => (item.partition === partition ? [index] : []));
      assert.deepEqual(numbers, expected, `partition ${partition} in push order`);
    }
    const first = updates.find((update) => (update.data as { n: number }).n === 0) as BridgeData;
    assert.equal(first.queue, queue);
    assert.equal(first.event, 'pushed');
    assert.equal(first.messageId, pushedIds[0]);
    stream.close();
  });

  test('with bridgeOn completed, only completions become updates (each group its own)', async () => {
    const queue = `jobs-${uniquePrefix('q')}`;
    await call(broker.url, 'POST', '/api/v1/configure', {
      queue,
      options: { bridgeTopic: 'https://example.com/jobs/{queue}', bridgeOn: 'completed' },
    });
    const pushed = await call(broker.url, 'POST', '/api/v1/push', {
      items: [1, 2, 3].map((n) => ({ queue, payload: { n } })),
    });
    assert.equal(pushed.status, 201);
    const popped = await call(broker.url, 'GET', `/api/v1/pop/queue/${queue}?batch=3`);
    assert.equal(popped.status, 200);
    const [one, two, three] = popped.body.messages as {
      transactionId: string;
      partitionId: string;
      leaseId: string;
    }[];
    const acked = await call(broker.url, 'POST', '/api/v1/ack/batch', {
      acknowledgments: [
        {
          transactionId: one?.transactionId,
          partitionId: one?.partitionId,
          leaseId: one?.leaseId,
          status: 'completed',
        },
        {
          transactionId: two?.transactionId,
          partitionId: two?.partitionId,
          leaseId: two?.leaseId,
          status: 'failed',
        },
        {
          transactionId: three?.transactionId,
          partitionId: three?.partitionId,
          leaseId: three?.leaseId,
          status: 'completed',
        },
      ],
    });
    assert.equal(acked.status, 200, JSON.stringify(acked.body));
    const topic = `https://example.com/jobs/${encodeURIComponent(queue)}`;
    const stream = await history(hub, [topic], 2);
    const updates = dataOf(stream);
    assert.deepEqual(
      updates.map((update) => [update.event, (update.data as { n: number }).n]),
      [
        ['completed', 1],
        ['completed', 3],
      ],
    );
    const ids = (pushed.body as { message_id: string }[]).map((result) => result.message_id);
    assert.deepEqual(
      stream.events.map((event) => event.id),
      [`urn:herald:completed:${ids[0]}`, `urn:herald:completed:${ids[2]}`],
    );
    // Once the queue's outbox is empty, a marker published to the hub comes after whatever the
    // bridge delivered: the failed ack became no update.
    await waitFor(async () => (await outboxRow(broker, queue))?.pending === 0, { what: 'an empty outbox' });
    await publishOk(hub.url, { topic, data: 'marker', id: `marker-${queue}` });
    await waitFor(() => stream.events.some((event) => event.id === `marker-${queue}`), {
      what: 'the marker',
    });
    assert.equal(stream.events.length, 3);
    stream.close();
  });

  test('a transaction publishes its update when it commits, never when it is refused', async () => {
    const queue = `tx-${uniquePrefix('q')}`;
    const topic = `https://example.com/tx/${queue}`;
    const refused = await call(broker.url, 'POST', '/api/v1/transaction', {
      operations: [
        { type: 'publish', topic, data: 'refused', id: `refused-${queue}` },
        {
          type: 'ack',
          transactionId: 'nope',
          partitionId: '00000000-0000-0000-0000-000000000000',
          status: 'completed',
        },
      ],
    });
    assert.equal(refused.status, 200);
    assert.equal(refused.body.success, false);
    const committed = await call(broker.url, 'POST', '/api/v1/transaction', {
      operations: [
        { type: 'push', items: [{ queue, payload: { n: 1 } }] },
        {
          type: 'publish',
          topic,
          data: 'committed',
          private: false,
          eventType: 'order',
          id: `committed-${queue}`,
        },
      ],
    });
    assert.equal(committed.status, 200, JSON.stringify(committed.body));
    assert.equal(committed.body.success, true);
    assert.deepEqual(committed.body.results[1], {
      index: 1,
      type: 'publish',
      success: true,
      id: `committed-${queue}`,
    });
    const alone = await call(broker.url, 'POST', '/api/v1/transaction', {
      operations: [{ type: 'publish', topic: [topic], data: 'alone' }],
    });
    assert.equal(alone.body.success, true);
    const generated = alone.body.results[0].id as string;
    assert.match(generated, /^urn:uuid:/);
    const stream = await history(hub, [topic], 2);
    // The refused transaction's update would sit in the same outbox (it touched no queue), before
    // the last one: it never arrives.
    await waitFor(() => stream.events.some((event) => event.id === generated), { what: 'the last update' });
    assert.deepEqual(
      stream.events.map((event) => [event.id, event.event, event.data]).sort(),
      [
        [`committed-${queue}`, 'order', 'committed'],
        [generated, undefined, 'alone'],
      ].sort(),
    );
    stream.close();
  });

  test('private bridged updates reach only subscribers whose token allows the topic', async () => {
    const queue = `private-${uniquePrefix('q')}`;
    const topic = `https://example.com/private/${encodeURIComponent(queue)}`;
    await call(broker.url, 'POST', '/api/v1/configure', {
      queue,
      options: { bridgeTopic: 'https://example.com/private/{queue}', bridgePrivate: true },
    });
    const anonymous = await SseStream.open(
      subscribeUrl(hub.url, [
        ['match', topic],
        ['match', 'https://example.com/marker'],
      ]),
    );
    const allowed = await SseStream.open(subscribeUrl(hub.url, [['match', topic]]), {
      authorization: `Bearer ${subscriberToken([{ match: topic }])}`,
    });
    await call(broker.url, 'POST', '/api/v1/push', { items: [{ queue, payload: 'secret' }] });
    await waitFor(() => allowed.events.length === 1, { what: 'the private update' });
    // A public update published after it reaches the anonymous subscriber; the private one did not.
    await call(broker.url, 'POST', '/api/v1/transaction', {
      operations: [{ type: 'publish', topic: 'https://example.com/marker', data: 'public' }],
    });
    await waitFor(() => anonymous.events.length === 1, { what: 'the public marker' });
    assert.equal(anonymous.events[0]?.data, 'public');
    allowed.close();
    anonymous.close();
  });

  test('bad bridge and publish input is refused with a clear error', async () => {
    const queue = `bad-${uniquePrefix('q')}`;
    const cases: [unknown, RegExp][] = [
      [{ bridgeTopic: 'https://example.com/{nope}' }, /bridgeTopic names \{nope\}/],
      [{ bridgeTopic: 7 }, /bridgeTopic must be a string/],
      [{ bridgeTopic: `https://example.com/${'x'.repeat(2048)}` }, /at most 2048/],
      [{ bridgeTopic: 'https://example.com/{queue}', bridgeOn: 'sometimes' }, /bridgeOn must be one of/],
    ];
    for (const [options, error] of cases) {
      const answer = await call(broker.url, 'POST', '/api/v1/configure', { queue, options });
      assert.equal(answer.status, 400, JSON.stringify(options));
      assert.match(JSON.stringify(answer.body), error);
    }
    const operations: [unknown, RegExp][] = [
      [{ type: 'publish' }, /topic must be a non-empty string/],
      [{ type: 'publish', topic: 'a\u0001b' }, /control characters/],
      [{ type: 'publish', topic: [] }, /at least one topic/],
      [{ type: 'publish', topic: 'x', data: 5 }, /data must be a string/],
      [{ type: 'publish', topic: 'x', private: 'yes' }, /private must be a boolean/],
    ];
    for (const [operation, error] of operations) {
      const answer = await call(broker.url, 'POST', '/api/v1/transaction', { operations: [operation] });
      assert.equal(answer.status, 400, JSON.stringify(operation));
      assert.match(JSON.stringify(answer.body), error);
    }
    // A broker without a hub refuses both rather than record intents nobody relays.
    const configure = await call(plain.url, 'POST', '/api/v1/configure', {
      queue,
      options: { bridgeTopic: 'https://example.com/{queue}' },
    });
    assert.equal(configure.status, 400);
    assert.match(JSON.stringify(configure.body), /BROKER_HUB_URL/);
    const publish = await call(plain.url, 'POST', '/api/v1/transaction', {
      operations: [{ type: 'publish', topic: 'https://example.com/x' }],
    });
    assert.equal(publish.status, 400);
    assert.match(JSON.stringify(publish.body), /BROKER_HUB_URL/);
  });
});

describe('the bridge while the hub is away', () => {
  test('intents wait, the lag shows in /metrics, and each is delivered once the hub is up', async () => {
    const hubPort = await freePort();
    const hubUrl = `http://127.0.0.1:${hubPort}/.well-known/mercure`;
    const broker = await startBridgeBroker({
      ...(await testRedisEnvironment()),
      BROKER_KEY_PREFIX: uniquePrefix('bridge-away'),
      BROKER_HUB_URL: hubUrl,
    });
    let hub: TestHub | undefined;
    try {
      const queue = `away-${uniquePrefix('q')}`;
      await call(broker.url, 'POST', '/api/v1/configure', {
        queue,
        options: { bridgeTopic: 'https://example.com/away/{queue}' },
      });
      await call(broker.url, 'POST', '/api/v1/push', {
        items: [1, 2, 3].map((n) => ({ queue, payload: n })),
      });
      await waitFor(
        async () => {
          const metrics = await (await fetch(`${broker.url}/metrics`)).text();
          const failures = Number(
            /^herald_outbox_relay_failures_total\{[^}]*\} (\S+)/m.exec(metrics)?.[1] ?? 0,
          );
          const lag = Number(/^herald_outbox_lag_seconds\{[^}]*\} (\S+)/m.exec(metrics)?.[1] ?? 0);
          return failures > 0 && lag > 0;
        },
        { what: 'a failed relay and a lag above 0 in /metrics' },
      );
      assert.equal((await outboxRow(broker, queue))?.pending, 3);
      hub = await startTestHub('redis', {
        MERCURE_DEV: 'true',
        MERCURE_ANONYMOUS: 'true',
        PORT: String(hubPort),
      });
      const stream = await history(hub, [`https://example.com/away/${encodeURIComponent(queue)}`], 3);
      assert.deepEqual(
        stream.events.map((event) => JSON.parse(event.data).data),
        [1, 2, 3],
      );
      stream.close();
    } finally {
      await broker.close();
      await hub?.close();
    }
  });
});

describe('the bridge under lost Redis replies', () => {
  const scripts = loadBrokerScripts();
  const script = (name: string) => scriptCall(scripts.get(name) as { sha: string; source: string });
  let server: RedisServer;
  let proxy: ReplyLossProxy;
  let hub: TestHub;
  let broker: Broker;
  before(async () => {
    server = await RedisServer.start();
    proxy = await ReplyLossProxy.start({ port: server.port });
    hub = await startTestHub('redis', {
      MERCURE_DEV: 'true',
      MERCURE_ANONYMOUS: 'true',
      REDIS_URL: server.url,
    });
    broker = await startBridgeBroker({
      REDIS_URL: proxy.url,
      BROKER_KEY_PREFIX: uniquePrefix('bridge-loss'),
      BROKER_HUB_URL: hub.url,
    });
  });
  after(async () => {
    await broker.close();
    await hub.close();
    await proxy.close();
    await server.destroy();
  });

  test('a lost reply of the push, the take or the removal still gives each message one update', async () => {
    const queue = `loss-${uniquePrefix('q')}`;
    await call(broker.url, 'POST', '/api/v1/configure', {
      queue,
      options: { bridgeTopic: 'https://example.com/loss/{queue}' },
    });
    const lost = [
      proxy.loseNextReply(script('push')),
      proxy.loseNextReply(script('outbox-take')),
      proxy.loseNextReply(script('outbox-done')),
    ];
    const ids: string[] = [];
    for (let round = 0; round < 5; round++) {
      const items = Array.from({ length: 10 }, (_, index) => ({
        queue,
        payload: round * 10 + index,
        transactionId: `m${round * 10 + index}`,
      }));
      // A connection the proxy cut fails the requests in flight on it (503): a client retries,
      // and dedup by transactionId answers what the first attempt stored.
      let pushed = await call(broker.url, 'POST', '/api/v1/push', { items });
      while (pushed.status === 503) pushed = await call(broker.url, 'POST', '/api/v1/push', { items });
      assert.equal(pushed.status, 201, JSON.stringify(pushed.body));
      ids.push(...(pushed.body as { message_id: string }[]).map((result) => result.message_id));
    }
    await Promise.all(lost);
    const stream = await history(hub, [`https://example.com/loss/${encodeURIComponent(queue)}`], 50);
    // Nothing more arrives: the outbox is empty, and a marker published after it comes last.
    await waitFor(async () => (await outboxRow(broker, queue))?.pending === 0, { what: 'an empty outbox' });
    const marker = await publishOk(hub.url, {
      topic: `https://example.com/loss/${encodeURIComponent(queue)}`,
      data: '"marker"',
    });
    await waitFor(() => stream.events.some((event) => event.id === marker), { what: 'the marker' });
    stream.events.pop();
    assert.deepEqual(
      stream.events.map((event) => event.id).sort(),
      ids.map((id) => `urn:herald:pushed:${id}`).sort(),
    );
    assert.deepEqual(
      stream.events.map((event) => JSON.parse(event.data).data),
      Array.from({ length: 50 }, (_, index) => index),
    );
    stream.close();
  });
});

describe('the bridge on the embedded defaults (no Redis)', () => {
  test('a bridged queue of the in-process broker publishes to an in-process hub', async () => {
    const hub = await startTestHub('memory', { MERCURE_DEV: 'true', MERCURE_ANONYMOUS: 'true' });
    const broker = await startBridgeBroker({ BROKER_HUB_URL: hub.url });
    try {
      await call(broker.url, 'POST', '/api/v1/configure', {
        queue: 'embedded',
        options: { bridgeTopic: 'https://example.com/embedded/{partition}' },
      });
      await call(broker.url, 'POST', '/api/v1/push', {
        items: [{ queue: 'embedded', partition: 'p', payload: 'hello' }],
      });
      const stream = await history(hub, ['https://example.com/embedded/p'], 1);
      assert.equal(JSON.parse(stream.events[0]?.data ?? '{}').data, 'hello');
      stream.close();
    } finally {
      await broker.close();
      await hub.close();
    }
  });
});

/*
 * The streams scripts are resend-safe (shared/redis/README.md): a reply-loss proxy between the
 * broker and a private Redis swallows one script reply and cuts the connection, ioredis resends
 * the script, and the client must get the first run's outcome, applied once (issue #10).
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { RedisServer, ReplyLossProxy, scriptCall, uniquePrefix } from '@herald/testkit';
import { Redis } from 'ioredis';
import type { Broker } from '../src/index.js';
import { loadBrokerScripts } from '../src/scripts.js';
import { client, queueName, startTestBroker } from './helpers.js';

const scripts = loadBrokerScripts();
function script(name: string) {
  const found = scripts.get(name);
  if (!found) throw new Error(`no script ${name}`);
  return scriptCall(found);
}

describe('streams scripts under a lost reply (redis)', () => {
  let server: RedisServer;
  let proxy: ReplyLossProxy;
  let broker: Broker;
  let api: ReturnType<typeof client>;
  const prefix = uniquePrefix('st-resend');
  before(async () => {
    server = await RedisServer.start();
    proxy = await ReplyLossProxy.start({ port: server.port });
    broker = await startTestBroker('redis', {
      REDIS_URL: proxy.url,
      BROKER_KEY_PREFIX: prefix,
    });
    api = client(broker.url);
  });
  after(async () => {
    await broker.close();
    await proxy.close();
    await server.destroy();
  });

  test('register: the resent script answers fresh, as the first run did', async () => {
    const lost = proxy.loseNextReply(script('streams-register'));
    const reply = await api.call('POST', '/streams/v1/queries', {
      name: queueName('st-resend-reg'),
      source_queue: 'src',
      config_hash: 'h',
    });
    await lost;
    assert.equal(reply.status, 200);
    assert.equal(reply.body.fresh, true);
  });

  test('reset: the resent script answers reset, as the first run did', async () => {
    const name = queueName('st-resend-reset');
    await api.call('POST', '/streams/v1/queries', { name, source_queue: 'src', config_hash: 'h1' });
    const lost = proxy.loseNextReply(script('streams-register'));
    const reply = await api.call('POST', '/streams/v1/queries', {
      name,
      source_queue: 'src',
      config_hash: 'h2',
      reset: true,
    });
    await lost;
    assert.equal(reply.status, 200);
    assert.equal(reply.body.reset, true);
  });

  test('cycle: the resent script answers the first result; state, sink push and ack apply once', async () => {
    const source = queueName('st-resend-src');
    const sink = queueName('st-resend-sink');
    const registered = await api.call('POST', '/streams/v1/queries', {
      name: queueName('st-resend-q'),
      source_queue: source,
      sink_queue: sink,
      config_hash: 'h',
    });
    await api.push([
      { queue: source, payload: 1, transactionId: 'a' },
      { queue: source, payload: 2, transactionId: 'b' },
    ]);
    const popped = await api.pop(source, 'batch=2&consumerGroup=g');
    const [first, last] = popped.body.messages;
    const lost = proxy.loseNextReply(script('streams-cycle'));
    const reply = await api.call('POST', '/streams/v1/cycle', {
      query_id: registered.body.query_id,
      partition_id: first.partitionId,
      consumer_group: 'g',
      state_ops: [{ type: 'upsert', key: 'sum', value: { acc: 3 } }],
      push_items: [{ queue: sink, payload: { sum: 3 } }],
      ack: { transactionId: last.transactionId, leaseId: last.leaseId, status: 'completed', count: 2 },
    });
    await lost;
    assert.equal(reply.status, 200);
    assert.equal(reply.body.success, true, JSON.stringify(reply.body));
    assert.equal(reply.body.push_results[0].status, 'queued');
    assert.deepEqual(reply.body.ack_result, { success: true, count: 2, lease_released: true, dlq: false });
    const sunk = await api.pop(sink, 'batch=10');
    assert.equal(sunk.body.messages.length, 1, 'one sink message');
    assert.equal((await api.pop(source, 'consumerGroup=g')).status, 204, 'source batch consumed');
    const state = await api.call('POST', '/streams/v1/state/get', {
      query_id: registered.body.query_id,
      partition_id: first.partitionId,
    });
    assert.deepEqual(
      state.body.rows.map((row: any) => [row.key, row.value]),
      [['sum', { acc: 3 }]],
    );
  });

  test('reset: a resent drop deletes the old generation once; the new one starts empty', async () => {
    const redis = new Redis(server.url);
    try {
      const name = queueName('st-resend-drop');
      const register = (body: Record<string, unknown>) =>
        api.call('POST', '/streams/v1/queries', { name, source_queue: 'src', ...body });
      const queryId = (await register({ config_hash: 'h1' })).body.query_id;
      const upsert = (key: string) =>
        api.call('POST', '/streams/v1/cycle', {
          query_id: queryId,
          partition_id: 'p',
          state_ops: [{ type: 'upsert', key, value: 1 }],
        });
      assert.equal((await upsert('old')).body.success, true);
      // Generation 0 keeps the layout of the first release: existing state stays readable.
      assert.deepEqual(await redis.hkeys(`${prefix}streams:{${queryId}}:s:p`), ['old']);

      const lost = proxy.loseNextReply(script('streams-drop'));
      const reply = await register({ config_hash: 'h2', reset: true });
      await lost;
      assert.equal(reply.status, 200);
      assert.equal(reply.body.reset, true);
      assert.deepEqual(await redis.keys(`${prefix}streams:{${queryId}}:s:*`), [], 'generation 0 dropped');
      const rows = async () =>
        (
          await api.call('POST', '/streams/v1/state/get', { query_id: queryId, partition_id: 'p' })
        ).body.rows.map((row: { key: string }) => row.key);
      assert.deepEqual(await rows(), []);
      assert.equal((await upsert('new')).body.success, true);
      assert.deepEqual(await rows(), ['new']);
      const metrics = await (await fetch(`${broker.url}/metrics`)).text();
      assert.match(
        metrics,
        new RegExp(
          `^herald_broker_streams_state_rows\\{query="${name.replaceAll('.', '\\.')}"[^}]*\\} 1$`,
          'm',
        ),
      );
    } finally {
      redis.disconnect();
    }
  });
});

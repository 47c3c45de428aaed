/*
 * Queen's streams API (/streams/v1/*, issue #10): query registration, the atomic cycle (state
 * ops + sink pushes + source ack, all or nothing, applied once) and state reads, over HTTP,
 * on both backends (docs/broker-streams.md, "Streams").
 */
import assert from 'node:assert/strict';
import { after, describe, test } from 'node:test';
import { stopTestRedis, uniquePrefix, waitFor } from '@herald/testkit';
import { STREAMS_LIMITS } from '../src/streams/limits.js';
import { BACKENDS, brokerSuite, client, queueFamily, queueName, startTestBroker } from './helpers.js';

after(() => stopTestRedis());

for (const backend of BACKENDS) {
  describe(`streams API (${backend})`, () => {
    const suite = brokerSuite(backend);

    const register = (body: Record<string, unknown>) => suite.api.call('POST', '/streams/v1/queries', body);
    const cycle = (body: Record<string, unknown>) => suite.api.call('POST', '/streams/v1/cycle', body);
    const stateGet = (body: Record<string, unknown>) => suite.api.call('POST', '/streams/v1/state/get', body);

    /** A registered query over a fresh source queue holding `count` messages, and their pop. */
    async function setup(count: number, options: Record<string, unknown> = {}) {
      const queue = queueFamily('st');
      const source = queue('src');
      const sink = queue('sink');
      await suite.api.configure(source, { leaseTime: 60, ...options });
      const registered = await register({
        name: queueName('st-query'),
        source_queue: source,
        sink_queue: sink,
        config_hash: 'h1',
      });
      assert.equal(registered.status, 200, JSON.stringify(registered.body));
      const group = `streams.${registered.body.name}`;
      let messages: any[] = [];
      if (count > 0) {
        await suite.api.push(
          Array.from({ length: count }, (_, n) => ({
            queue: source,
            payload: { n },
            transactionId: `m${n}`,
          })),
        );
        const popped = await suite.api.pop(
          source,
          `batch=${count}&consumerGroup=${encodeURIComponent(group)}`,
        );
        assert.equal(popped.status, 200);
        messages = popped.body.messages;
      }
      return {
        queue,
        source,
        sink,
        group,
        name: registered.body.name as string,
        queryId: registered.body.query_id as string,
        messages,
      };
    }

    test('registration is idempotent by name and config_hash; a changed hash is 409 unless reset', async () => {
      const name = queueName('st-reg');
      const body = { name, source_queue: 'st.src', sink_queue: 'st.sink', config_hash: 'abc' };
      const first = await register(body);
      assert.equal(first.status, 200);
      assert.equal(first.body.success, true);
      assert.equal(first.body.fresh, true);
      assert.equal(first.body.reset, false);
      assert.equal(first.body.name, name);
      assert.equal(first.body.config_hash, 'abc');
      assert.match(first.body.query_id, /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/);

      const again = await register(body);
      assert.equal(again.status, 200);
      assert.deepEqual(
        [again.body.query_id, again.body.fresh, again.body.reset],
        [first.body.query_id, false, false],
      );

      const changed = await register({ ...body, config_hash: 'def' });
      assert.equal(changed.status, 409);
      assert.equal(changed.body.success, false);
      assert.equal(changed.body.query_id, first.body.query_id);
      assert.match(changed.body.error, /config_hash mismatch/);

      const reset = await register({ ...body, config_hash: 'def', reset: true });
      assert.equal(reset.status, 200);
      assert.deepEqual(
        [reset.body.query_id, reset.body.fresh, reset.body.reset, reset.body.config_hash],
        [first.body.query_id, false, true, 'def'],
      );
      // The new hash is now the registered one.
      assert.equal((await register({ ...body, config_hash: 'def' })).status, 200);
      assert.equal((await register(body)).status, 409);
    });

    test('registration validates its body (400)', async () => {
      for (const body of [
        [],
        {},
        { source_queue: 's', config_hash: 'h' },
        { name: '', source_queue: 's', config_hash: 'h' },
        { name: 'n', config_hash: 'h' },
        { name: 'n', source_queue: 's' },
        { name: 'n', source_queue: 's', config_hash: 5 },
        { name: 'n', source_queue: 's', config_hash: 'h', reset: 'yes' },
        { name: 'n'.repeat(513), source_queue: 's', config_hash: 'h' },
      ]) {
        const reply = await suite.api.call('POST', '/streams/v1/queries', body);
        assert.equal(reply.status, 400, JSON.stringify(body));
        assert.equal(typeof reply.body.error, 'string');
      }
    });

    test("a sink's maxSize counts the slowest group's backlog, as a push's does: consumed messages leave room", async () => {
      const { sink, group, queryId, messages } = await setup(1);
      await suite.api.configure(sink, { maxSize: 2 });
      assert.equal((await suite.api.push([1, 2].map((n) => ({ queue: sink, payload: n })))).status, 201);
      const popped = await suite.api.pop(sink, 'batch=2&consumerGroup=readers');
      assert.equal(popped.body.messages.length, 2);
      const acks = popped.body.messages.map((message: any) => ({
        transactionId: message.transactionId,
        partitionId: message.partitionId,
        leaseId: message.leaseId,
        consumerGroup: 'readers',
        status: 'completed',
      }));
      assert.equal((await suite.api.ackBatch({ acknowledgments: acks })).status, 200);
      // Both consumed by the only group: room for two again (retained messages never count).
      const reply = await cycle({
        query_id: queryId,
        partition_id: messages[0].partitionId,
        consumer_group: group,
        state_ops: [],
        push_items: [{ queue: sink, payload: 3 }],
      });
      assert.equal(reply.body.success, true, JSON.stringify(reply.body));
      assert.equal(reply.body.push_results[0].status, 'queued');
      const full = await cycle({
        query_id: queryId,
        partition_id: messages[0].partitionId,
        consumer_group: group,
        state_ops: [],
        push_items: [4, 5].map((n) => ({ queue: sink, payload: n })),
      });
      assert.equal(full.body.success, false);
      assert.match(full.body.error, /Queue is full \(maxSize 2\)/);
    });

    test('a cycle applies state ops, sink pushes and the source ack together', async () => {
      const { source, sink, group, queryId, messages } = await setup(3);
      const partitionId = messages[0].partitionId;
      const last = messages[2];
      const reply = await cycle({
        query_id: queryId,
        partition_id: partitionId,
        consumer_group: group,
        state_ops: [
          { type: 'upsert', key: 'b', value: { acc: 2 } },
          { type: 'upsert', key: 'a', value: { acc: 1, windowEnd: 100 } },
          { type: 'upsert', key: 'gone', value: 1 },
          { type: 'delete', key: 'gone' },
        ],
        push_items: [{ queue: sink, partition: 'p1', payload: { total: 3 } }],
        ack: { transactionId: last.transactionId, leaseId: last.leaseId, status: 'completed', count: 3 },
      });
      assert.equal(reply.status, 200, JSON.stringify(reply.body));
      assert.equal(reply.body.success, true);
      assert.equal(reply.body.query_id, queryId);
      assert.equal(reply.body.partition_id, partitionId);
      assert.equal(reply.body.state_ops_applied, 4);
      assert.equal(reply.body.push_results.length, 1);
      assert.equal(reply.body.push_results[0].status, 'queued');
      assert.deepEqual(reply.body.ack_result, { success: true, count: 3, lease_released: true, dlq: false });

      // The whole batch is consumed by the group: nothing comes back.
      assert.equal((await suite.api.pop(source, `consumerGroup=${encodeURIComponent(group)}`)).status, 204);
      const sunk = await suite.api.popPartition(sink, 'p1');
      assert.equal(sunk.status, 200);
      assert.deepEqual(
        sunk.body.messages.map((m: any) => m.data),
        [{ total: 3 }],
      );

      const all = await stateGet({ query_id: queryId, partition_id: partitionId });
      assert.equal(all.status, 200);
      assert.equal(all.body.success, true);
      assert.deepEqual(
        all.body.rows.map((row: any) => [row.key, row.value]),
        [
          ['a', { acc: 1, windowEnd: 100 }],
          ['b', { acc: 2 }],
        ],
      );
      assert.ok(!Number.isNaN(Date.parse(all.body.rows[0].updated_at)));
      const some = await stateGet({ query_id: queryId, partition_id: partitionId, keys: ['b', 'nope'] });
      assert.deepEqual(
        some.body.rows.map((row: any) => row.key),
        ['b'],
      );
      const otherShard = await stateGet({ query_id: queryId, partition_id: 'another', keys: [] });
      assert.deepEqual(otherShard.body.rows, []);
    });

    test('sink pushes keep their order per queue and answer in input order, duplicates included', async () => {
      const { queryId, sink, queue } = await setup(0);
      const other = queue('sink2');
      const reply = await cycle({
        query_id: queryId,
        partition_id: 'p',
        push_items: [
          { queue: sink, partition: 'x', payload: 1, transactionId: 't1' },
          { queue: other, payload: 2, transactionId: 't2' },
          { queue: sink, partition: 'x', payload: 3, transactionId: 't3' },
          { queue: sink, partition: 'x', payload: 4, transactionId: 't1' },
        ],
      });
      assert.equal(reply.body.success, true, JSON.stringify(reply.body));
      assert.deepEqual(
        reply.body.push_results.map((r: any) => [r.index, r.queueName, r.transaction_id, r.status]),
        [
          [0, sink, 't1', 'queued'],
          [1, other, 't2', 'queued'],
          [2, sink, 't3', 'queued'],
          [3, sink, 't1', 'duplicate'],
        ],
      );
      assert.equal(reply.body.push_results[3].message_id, reply.body.push_results[0].message_id);
      const sunk = await suite.api.popPartition(sink, 'x', 'batch=10');
      assert.deepEqual(
        sunk.body.messages.map((m: any) => m.data),
        [1, 3],
      );
    });

    test('state/get filters by key_prefix and ripe_at_or_before (windowEnd)', async () => {
      const { queryId } = await setup(0);
      const reply = await cycle({
        query_id: queryId,
        partition_id: 'shard',
        state_ops: [
          { type: 'upsert', key: 'w\u001f1', value: { windowEnd: 10 } },
          { type: 'upsert', key: 'w\u001f2', value: { windowEnd: 20 } },
          { type: 'upsert', key: 'w\u001f3', value: { windowEnd: 'late' } },
          { type: 'upsert', key: 'x\u001f1', value: { windowEnd: 5 } },
        ],
      });
      assert.equal(reply.body.success, true, JSON.stringify(reply.body));
      assert.equal(reply.body.ack_result, null);
      const ripe = await stateGet({
        query_id: queryId,
        partition_id: 'shard',
        keys: [],
        key_prefix: 'w\u001f',
        ripe_at_or_before: 15,
      });
      assert.deepEqual(
        ripe.body.rows.map((row: any) => row.key),
        ['w\u001f1'],
      );
      const prefixed = await stateGet({ query_id: queryId, partition_id: 'shard', key_prefix: 'w\u001f' });
      assert.equal(prefixed.body.rows.length, 3);
    });

    test('a cycle whose ack is invalid applies nothing: no state, no sink message, source still leased', async () => {
      const { source, sink, group, queryId, messages } = await setup(2);
      const partitionId = messages[0].partitionId;
      const body = {
        query_id: queryId,
        partition_id: partitionId,
        consumer_group: group,
        state_ops: [{ type: 'upsert', key: 'k', value: { acc: 1 } }],
        push_items: [{ queue: sink, payload: { out: 1 } }],
      };
      for (const ack of [
        { transactionId: messages[1].transactionId, leaseId: 'not-the-lease', status: 'completed' },
        { transactionId: 'no-such-message', leaseId: messages[1].leaseId, status: 'completed' },
      ]) {
        const reply = await cycle({ ...body, ack });
        assert.equal(reply.status, 200);
        assert.equal(reply.body.success, false);
        assert.equal(typeof reply.body.error, 'string');
        assert.equal(reply.body.state_ops_applied, 0);
        assert.deepEqual(reply.body.push_results, []);
      }
      assert.deepEqual((await stateGet({ query_id: queryId, partition_id: partitionId })).body.rows, []);
      assert.equal((await suite.api.pop(sink)).status, 204, 'no sink message');
      // The lease still holds: the valid cycle goes through afterwards.
      const ok = await cycle({
        ...body,
        ack: { transactionId: messages[1].transactionId, leaseId: messages[1].leaseId, status: 'completed' },
      });
      assert.equal(ok.body.success, true, JSON.stringify(ok.body));
      assert.equal((await suite.api.pop(source, `consumerGroup=${encodeURIComponent(group)}`)).status, 204);
    });

    test('a retried cycle (same body) applies once and answers the first result', async () => {
      const { sink, group, queryId, messages } = await setup(1);
      const body = {
        query_id: queryId,
        partition_id: messages[0].partitionId,
        consumer_group: group,
        state_ops: [{ type: 'upsert', key: 'k', value: { acc: 1 } }],
        push_items: [{ queue: sink, payload: { out: 1 } }],
        ack: { transactionId: messages[0].transactionId, leaseId: messages[0].leaseId, status: 'completed' },
      };
      const first = await cycle(body);
      assert.equal(first.body.success, true, JSON.stringify(first.body));
      const second = await cycle(body);
      assert.equal(second.status, 200);
      assert.deepEqual(second.body, first.body);
      const sunk = await suite.api.pop(sink, 'batch=10');
      assert.equal(sunk.body.messages.length, 1, 'one sink message');
    });

    test('release_lease false keeps the lease; the unacked tail comes back in order after it expires', async () => {
      const { source, group, queryId, messages } = await setup(3, { leaseTime: 1, retryLimit: 5 });
      const reply = await cycle({
        query_id: queryId,
        partition_id: messages[0].partitionId,
        consumer_group: group,
        release_lease: false,
        ack: { transactionId: messages[0].transactionId, leaseId: messages[0].leaseId, count: 1 },
      });
      assert.equal(reply.body.success, true, JSON.stringify(reply.body));
      assert.equal(reply.body.ack_result.lease_released, false);
      const query = `batch=10&consumerGroup=${encodeURIComponent(group)}`;
      assert.equal((await suite.api.pop(source, query)).status, 204, 'still leased');
      const again = await waitFor(async () => {
        const popped = await suite.api.pop(source, query);
        return popped.status === 200 ? popped : undefined;
      });
      assert.deepEqual(
        again.body.messages.map((m: any) => m.transactionId),
        ['m1', 'm2'],
      );
    });

    test('an ack with status dlq dead-letters the message it names', async () => {
      const { source, group, queryId, messages } = await setup(1);
      const reply = await cycle({
        query_id: queryId,
        partition_id: messages[0].partitionId,
        consumer_group: group,
        ack: {
          transactionId: messages[0].transactionId,
          leaseId: messages[0].leaseId,
          status: 'dlq',
          error: 'bad record',
        },
      });
      assert.equal(reply.body.success, true, JSON.stringify(reply.body));
      assert.equal(reply.body.ack_result.dlq, true);
      const dlq = await suite.api.call('GET', `/api/v1/dlq?queue=${encodeURIComponent(source)}`);
      assert.equal(dlq.body.total, 1);
      assert.equal(dlq.body.messages[0].errorMessage, 'bad record');
    });

    test('reset clears the query state', async () => {
      const { queryId, source, name } = await setup(0);
      await cycle({
        query_id: queryId,
        partition_id: 'p',
        state_ops: [{ type: 'upsert', key: 'k', value: 1 }],
      });
      assert.equal((await stateGet({ query_id: queryId, partition_id: 'p' })).body.rows.length, 1);
      const registered = await register({ name, source_queue: source, config_hash: 'h2', reset: true });
      assert.equal(registered.body.reset, true);
      assert.deepEqual((await stateGet({ query_id: queryId, partition_id: 'p' })).body.rows, []);
    });

    test('cycle and state/get: unknown query 404, bad input 400 (bounded)', async () => {
      const { queryId } = await setup(0);
      assert.equal((await cycle({ query_id: 'nope', partition_id: 'p' })).status, 404);
      assert.equal((await stateGet({ query_id: 'nope', partition_id: 'p' })).status, 404);
      const big = 'x'.repeat(STREAMS_LIMITS.maxStateValueBytes);
      for (const body of [
        {},
        { query_id: queryId },
        { partition_id: 'p' },
        { query_id: queryId, partition_id: 5 },
        { query_id: queryId, partition_id: 'p', state_ops: {} },
        { query_id: queryId, partition_id: 'p', state_ops: [{ type: 'merge', key: 'k' }] },
        { query_id: queryId, partition_id: 'p', state_ops: [{ type: 'upsert' }] },
        { query_id: queryId, partition_id: 'p', state_ops: [{ type: 'upsert', key: '\ud800', value: 1 }] },
        {
          query_id: queryId,
          partition_id: 'p',
          state_ops: [{ type: 'delete', key: 'k'.repeat(STREAMS_LIMITS.maxStateKeyLength + 1) }],
        },
        { query_id: queryId, partition_id: 'p', state_ops: [{ type: 'upsert', key: 'k', value: big }] },
        {
          query_id: queryId,
          partition_id: 'p',
          state_ops: Array.from({ length: STREAMS_LIMITS.maxStateOps + 1 }, () => ({
            type: 'delete',
            key: 'k',
          })),
        },
        { query_id: queryId, partition_id: 'p', push_items: [{ payload: 1 }] },
        { query_id: queryId, partition_id: 'p', ack: { leaseId: 'l' } },
        { query_id: queryId, partition_id: 'p', ack: { transactionId: 't', status: 'later' } },
        { query_id: queryId, partition_id: 'p', release_lease: 'no' },
      ]) {
        const reply = await cycle(body);
        assert.equal(reply.status, 400, JSON.stringify(body).slice(0, 200));
        assert.equal(typeof reply.body.error, 'string');
      }
      for (const body of [
        { query_id: queryId },
        { query_id: queryId, partition_id: 'p', keys: 'k' },
        { query_id: queryId, partition_id: 'p', keys: [1] },
        {
          query_id: queryId,
          partition_id: 'p',
          keys: Array(STREAMS_LIMITS.maxStateKeysPerGet + 1).fill('k'),
        },
        { query_id: queryId, partition_id: 'p', ripe_at_or_before: 'soon' },
      ]) {
        const reply = await stateGet(body);
        assert.equal(reply.status, 400, JSON.stringify(body).slice(0, 200));
      }
    });

    test('a shard holds at most maxStateRowsPerShard rows: a cycle past it applies nothing', async () => {
      const { queryId } = await setup(0);
      const max = STREAMS_LIMITS.maxStateRowsPerShard;
      const batch = STREAMS_LIMITS.maxStateOps;
      for (let start = 0; start < max; start += batch) {
        const ops = Array.from({ length: Math.min(batch, max - start) }, (_, n) => ({
          type: 'upsert',
          key: `k${start + n}`,
          value: 1,
        }));
        const filled = await cycle({ query_id: queryId, partition_id: 'full', state_ops: ops });
        assert.equal(filled.body.success, true, JSON.stringify(filled.body).slice(0, 200));
      }
      const over = await cycle({
        query_id: queryId,
        partition_id: 'full',
        state_ops: [
          { type: 'upsert', key: 'k0', value: 2 },
          { type: 'upsert', key: 'one-more', value: 1 },
        ],
      });
      assert.equal(over.body.success, false);
      assert.match(over.body.error, /state shard is full/);
      const rows = await stateGet({ query_id: queryId, partition_id: 'full', keys: ['k0', 'one-more'] });
      assert.deepEqual(
        rows.body.rows.map((row: any) => [row.key, row.value]),
        [['k0', 1]],
      );
    });

    test('state rows and bytes per query show in /metrics', async () => {
      const name = queueName('st-metrics');
      const registered = await register({ name, source_queue: 's', config_hash: 'h' });
      const queryId = registered.body.query_id;
      await cycle({
        query_id: queryId,
        partition_id: 'p',
        state_ops: [
          { type: 'upsert', key: 'a', value: { n: 1 } },
          { type: 'upsert', key: 'b', value: { n: 2 } },
        ],
      });
      const text = await (await fetch(`${suite.broker.url}/metrics`)).text();
      const rows = text.match(
        new RegExp(`herald_broker_streams_state_rows\\{query="${name}"[^}]*\\} (\\d+)`),
      );
      assert.equal(
        rows?.[1],
        '2',
        text
          .split('\n')
          .filter((l) => l.includes('streams'))
          .join('\n'),
      );
      const bytes = text.match(
        new RegExp(`herald_broker_streams_state_bytes\\{query="${name}"[^}]*\\} (\\d+)`),
      );
      assert.ok(Number(bytes?.[1]) > 0);
    });
  });
}

for (const backend of BACKENDS) {
  test(`streams state gauges are capped at BROKER_METRICS_MAX_QUEUES queries, the rest under __other__ (${backend})`, async () => {
    const broker = await startTestBroker(backend, { BROKER_METRICS_MAX_QUEUES: '2' });
    try {
      const api = client(broker.url);
      const names = ['a', 'b', 'c', 'd'].map((letter) => `${letter}-${queueName('st-cap')}`);
      for (const name of names) {
        const registered = await api.call('POST', '/streams/v1/queries', {
          name,
          source_queue: 's',
          config_hash: 'h',
        });
        await api.call('POST', '/streams/v1/cycle', {
          query_id: registered.body.query_id,
          partition_id: 'p',
          state_ops: [{ type: 'upsert', key: 'k', value: 1 }],
        });
      }
      const text = await (await fetch(`${broker.url}/metrics`)).text();
      const rows = [
        ...text.matchAll(/^herald_broker_streams_state_rows\{query="([^"]+)"[^}]*\} (\d+)$/gm),
      ].map((match) => [match[1], Number(match[2])]);
      assert.deepEqual(
        rows.sort(),
        [
          [names[0], 1],
          [names[1], 1],
          ['__other__', 2],
        ].sort(),
      );
    } finally {
      await broker.close();
    }
  });
}

describe('a reset seen by another node (redis)', () => {
  test('a node that read the old generation reads and writes the new one after another node reset the query', async () => {
    const prefix = uniquePrefix('st-gen');
    const [one, two] = await Promise.all([
      startTestBroker('redis', { BROKER_KEY_PREFIX: prefix }),
      startTestBroker('redis', { BROKER_KEY_PREFIX: prefix }),
    ]);
    try {
      const [apiOne, apiTwo] = [client(one.url), client(two.url)];
      const name = queueName('st-gen');
      const register = (api: typeof apiOne, body: Record<string, unknown>) =>
        api.call('POST', '/streams/v1/queries', { name, source_queue: 'st.src', ...body });
      const upsert = (api: typeof apiOne, queryId: string, key: string) =>
        api.call('POST', '/streams/v1/cycle', {
          query_id: queryId,
          partition_id: 'p',
          state_ops: [{ type: 'upsert', key, value: 1 }],
        });
      const keys = async (api: typeof apiOne, queryId: string) =>
        (
          await api.call('POST', '/streams/v1/state/get', { query_id: queryId, partition_id: 'p' })
        ).body.rows.map((row: { key: string }) => row.key);
      const queryId = (await register(apiOne, { config_hash: 'h1' })).body.query_id;
      assert.equal((await upsert(apiOne, queryId, 'old')).body.success, true);
      assert.deepEqual(await keys(apiOne, queryId), ['old'], 'node one knows generation 0');

      const reset = await register(apiTwo, { config_hash: 'h2', reset: true });
      assert.deepEqual([reset.status, reset.body.reset], [200, true]);
      assert.deepEqual(await keys(apiOne, queryId), [], 'node one reads the new generation');
      assert.equal((await upsert(apiOne, queryId, 'new')).body.success, true);
      assert.deepEqual(await keys(apiTwo, queryId), ['new'], 'node one wrote into the new generation');

      // A second reset from node two while node one still holds generation 1 for its cycles.
      assert.equal((await register(apiTwo, { config_hash: 'h3', reset: true })).body.reset, true);
      assert.equal((await upsert(apiOne, queryId, 'newer')).body.success, true);
      assert.deepEqual(await keys(apiTwo, queryId), ['newer']);
      const metrics = await (await fetch(`${two.url}/metrics`)).text();
      const rows = metrics.match(/^herald_broker_streams_state_rows\{query="([^"]+)"[^}]*\} (\d+)$/gm) ?? [];
      assert.deepEqual(
        rows.filter((line) => line.includes(`"${name}"`)).map((line) => line.split(' ').at(-1)),
        ['1'],
      );
    } finally {
      await Promise.all([one.close(), two.close()]);
    }
  });
});

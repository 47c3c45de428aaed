/*
 * Per-queue series are bounded (issue #8, defect 6): queue names come from clients, so past
 * BROKER_METRICS_MAX_QUEUES they share `queue="__other__"`, and a deleted queue's series go.
 */
import assert from 'node:assert/strict';
import { after, describe, test } from 'node:test';
import { stopTestRedis } from '@herald/testkit';
import { BACKENDS, brokerSuite, queueName } from './helpers.js';

after(() => stopTestRedis());

const CAP = 5;
const EXTRA = 7;
const PER_QUEUE = [
  'herald_broker_push_total',
  'herald_broker_pop_total',
  'herald_broker_ack_total',
  'herald_broker_pending_messages',
  'herald_broker_dlq_messages',
  'herald_broker_oldest_pending_age_seconds',
  'herald_consumer_group_lag_messages',
  'herald_consumer_group_lag_seconds',
];

/** metric name → the `queue` label values of its series. */
async function queueSeries(url: string): Promise<Map<string, string[]>> {
  const text = await (await fetch(`${url}/metrics`)).text();
  const series = new Map<string, string[]>(PER_QUEUE.map((name) => [name, []]));
  for (const line of text.split('\n')) {
    const match = /^(\w+)\{(.*)\} /.exec(line);
    const queue = match && /(?:^|,)queue="([^"]*)"/.exec(match[2] as string);
    if (match && queue) series.get(match[1] as string)?.push(queue[1] as string);
  }
  return series;
}

for (const backend of BACKENDS) {
  describe(`broker metric cardinality (${backend})`, () => {
    const suite = brokerSuite(backend, { BROKER_METRICS_MAX_QUEUES: String(CAP) });

    test(`pushing to cap+${EXTRA} new queues keeps at most cap+1 series per metric; a deleted queue's series go`, async () => {
      const queues = Array.from({ length: CAP + EXTRA }, () => queueName('card'));
      assert.equal((await suite.api.push(queues.map((queue) => ({ queue, payload: 1 })))).status, 201);
      for (const queue of queues) {
        const popped = await suite.api.pop(queue);
        assert.equal(popped.status, 200);
        const [message] = popped.body.messages;
        const acked = await suite.api.ack({
          transactionId: message.transactionId,
          partitionId: message.partitionId,
          leaseId: message.leaseId,
        });
        assert.equal(acked.status, 200);
      }
      // One more message each, left pending, so every queue has a non-zero gauge.
      assert.equal((await suite.api.push(queues.map((queue) => ({ queue, payload: 2 })))).status, 201);
      assert.equal((await suite.api.call('POST', '/api/v1/stats/refresh')).status, 200);

      const before = await queueSeries(suite.broker.url);
      for (const [metric, labels] of before) {
        const distinct = new Set(labels);
        assert.ok(distinct.size <= CAP + 1, `${metric}: ${distinct.size} queue labels`);
        assert.ok(distinct.has('__other__'), `${metric} has no __other__ series`);
      }
      const pushedLabels = new Set(before.get('herald_broker_push_total'));
      const labelled = queues.filter((queue) => pushedLabels.has(queue));
      assert.equal(labelled.length, CAP);

      const victim = labelled[0] as string;
      assert.equal(
        (await suite.api.call('DELETE', `/api/v1/resources/queues/${encodeURIComponent(victim)}`)).status,
        200,
      );
      const afterDelete = await queueSeries(suite.broker.url);
      for (const [metric, labels] of afterDelete) {
        assert.ok(!labels.includes(victim), `${metric} still has the deleted queue`);
      }
      // The freed slot goes to another queue; the bound still holds.
      assert.equal((await suite.api.push([{ queue: queueName('card'), payload: 1 }])).status, 201);
      assert.equal((await suite.api.call('POST', '/api/v1/stats/refresh')).status, 200);
      for (const [metric, labels] of await queueSeries(suite.broker.url)) {
        assert.ok(new Set(labels).size <= CAP + 1, `${metric}: ${new Set(labels).size} queue labels`);
      }
    });
  });
}

for (const backend of BACKENDS) {
  describe(`consumer-group lag series are capped too (${backend})`, () => {
    const suite = brokerSuite(backend, { BROKER_METRICS_MAX_QUEUES: String(CAP) });

    test(`cap+${EXTRA} groups on one queue: at most cap group labels plus __other__, which sums their lag`, async () => {
      const queue = queueName('groups');
      assert.equal((await suite.api.push([{ queue, payload: 1 }])).status, 201);
      for (let group = 0; group < CAP + EXTRA; group++) {
        assert.equal((await suite.api.pop(queue, `consumerGroup=g${group}`)).status, 200);
      }
      assert.equal((await suite.api.call('POST', '/api/v1/stats/refresh')).status, 200);
      const text = await (await fetch(`${suite.broker.url}/metrics`)).text();
      const groups = new Map<string, number>();
      for (const line of text.split('\n')) {
        if (!line.startsWith('herald_consumer_group_lag_messages{') || !line.includes(`queue="${queue}"`))
          continue;
        const group = /group="([^"]*)"/.exec(line)?.[1] as string;
        groups.set(group, Number(line.slice(line.lastIndexOf(' ') + 1)));
      }
      assert.equal(groups.size, CAP + 1, [...groups.keys()].join(', '));
      // Each group holds its one message under lease: unresolved, so lag 1 each.
      assert.equal(groups.get('__other__'), EXTRA);
    });
  });
}

import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { stopTestRedis, testRedisEnvironment, uniquePrefix, waitFor } from '@herald/testkit';
import {
  type HubProcess,
  publishOk,
  SECURE,
  SseStream,
  spawnHub,
  subscriberToken,
  subscribeUrl,
} from './support.js';

const SUBSCRIPTIONS = '/.well-known/mercure/subscriptions';
const watcherToken = subscriberToken([
  { match: `${SUBSCRIPTIONS}{/matchType}{/match}{/subscriber}`, matchType: 'URITemplate' },
  { match: SUBSCRIPTIONS },
  { match: '*' },
]);

describe('a two-node cluster on one Redis', () => {
  let nodeA: HubProcess;
  let nodeB: HubProcess;
  let environment: Record<string, string>;

  before(async () => {
    environment = {
      ...(await testRedisEnvironment()),
      MERCURE_REDIS_PREFIX: uniquePrefix('cluster'),
      MERCURE_ANONYMOUS: '1',
      MERCURE_SUBSCRIPTIONS: '1',
      MERCURE_SUBSCRIPTIONS_LEASE: '1s',
      MERCURE_HEARTBEAT: '0',
    };
    [nodeA, nodeB] = await Promise.all([spawnHub(environment), spawnHub(environment)]);
  });
  after(async () => {
    await Promise.all([nodeA?.stop(), nodeB?.stop()]);
    await stopTestRedis();
  });

  test('published on A, received on A and B: same ids, publish order per topic', async () => {
    const topics = ['https://example.com/c/1', 'https://example.com/c/2'];
    const parameters: [string, string][] = topics.map((topic) => ['match', topic]);
    const onA = await SseStream.open(subscribeUrl(nodeA.url, parameters));
    const onB = await SseStream.open(subscribeUrl(nodeB.url, parameters));
    const ids: string[] = [];
    for (let index = 0; index < 40; index++) {
      const node = index % 3 === 0 ? nodeB : nodeA;
      ids.push(await publishOk(node.url, { topic: topics[index % 2] as string, data: String(index) }));
    }
    for (const stream of [onA, onB]) {
      await stream.waitForEvents(ids.length);
      assert.deepEqual(
        stream.events.map((event) => event.id),
        ids,
      );
      stream.close();
    }
  });

  test('history replays across nodes: published on A, resumed on B with Last-Event-ID', async () => {
    const topic = 'https://example.com/c/replay';
    const ids: string[] = [];
    for (let index = 0; index < 6; index++)
      ids.push(await publishOk(nodeA.url, { topic, data: String(index) }));
    const resumed = await SseStream.open(subscribeUrl(nodeB.url, [['match', topic]]), {
      'last-event-id': ids[1] as string,
    });
    assert.equal(resumed.headers['last-event-id'], ids[1]);
    await resumed.waitForEvents(4);
    assert.deepEqual(
      resumed.events.map((event) => event.id),
      ids.slice(2),
    );
    resumed.close();
  });

  test("the subscriptions API on B lists a subscription held on A, and A's crash is announced once", async () => {
    const extra = await spawnHub(environment);
    const topic = 'https://example.com/c/held-on-extra';
    const held = await SseStream.open(subscribeUrl(extra.url, [['match', topic]]), {
      authorization: `Bearer ${subscriberToken([{ match: topic, payload: { held: 'extra' } }])}`,
    });
    assert.equal(held.status, 200);
    const watcher = await SseStream.open(
      subscribeUrl(nodeB.url, [['matchURITemplate', `${SUBSCRIPTIONS}{/matchType}{/match}{/subscriber}`]]),
      { authorization: `Bearer ${watcherToken}` },
    );
    const listedOnB = async () => {
      const response = await fetch(`${nodeB.origin}${SUBSCRIPTIONS}/Exact/${encodeURIComponent(topic)}`, {
        headers: { ...SECURE, authorization: `Bearer ${watcherToken}` },
      });
      return ((await response.json()) as { subscriptions: { id: string; payload?: unknown }[] })
        .subscriptions;
    };
    const listed = await listedOnB();
    assert.equal(listed.length, 1, 'the subscription held on another node is listed on B');
    assert.deepEqual(listed[0]?.payload, { held: 'extra' });
    const subscriptionId = listed[0]?.id as string;

    // SIGKILL: no graceful unregistration; the lease expires and a survivor announces the end.
    extra.child.kill('SIGKILL');
    await extra.exited;
    const isEnd = (data: string) => {
      const document = JSON.parse(data) as { id: string; active: boolean };
      return document.id === subscriptionId && document.active === false;
    };
    await watcher.until(() => watcher.events.some((event) => isEnd(event.data)));
    assert.deepEqual(await listedOnB(), [], 'the crashed node left no ghost');
    // The claim removed the entries in the same script that won the lease: no second claimant
    // can find them, so no second announcement can follow.
    assert.equal(watcher.events.filter((event) => isEnd(event.data)).length, 1, 'announced exactly once');
    watcher.close();
    held.close();
  });
});

describe('cluster readiness', () => {
  test('a node whose Redis is unreachable is alive but not ready', async () => {
    const node = await spawnHub(
      { REDIS_URL: 'redis://127.0.0.1:1', MERCURE_ANONYMOUS: '1' },
      { waitReady: false },
    );
    try {
      await waitFor(
        async () => (await fetch(`${node.origin}/healthz`).catch(() => undefined))?.status === 200,
        {
          what: 'liveness',
        },
      );
      const ready = await fetch(`${node.origin}/readyz`);
      assert.equal(ready.status, 503);
      const metrics = await (await fetch(`${node.origin}/metrics`)).text();
      assert.match(metrics, /mercure_pubsub_probe_ok(\{[^}]*\})? 0/);
    } finally {
      await node.stop();
    }
  });
});

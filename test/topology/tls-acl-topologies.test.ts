/*
 * Both services on a Sentinel set and on a Redis Cluster that take TLS and ACL users only
 * (issue #12: "with TLS and auth for each"), as tls-acl.test.ts does for one server: every
 * server, replica, sentinel and cluster node listens on a TLS port only (the plain port closed),
 * `default` may only PING, and the data nodes and the sentinels each have their own ACL user.
 * The nodes trust the throwaway CA through NODE_EXTRA_CA_CERTS and reach the topology with
 * REDIS_TLS=true and REDIS_USERNAME/REDIS_PASSWORD (and REDIS_SENTINEL_USERNAME/_PASSWORD):
 * ready, a broker push and pop, a hub publish its subscriber receives. A wrong password leaves
 * a node not ready, and its output never carries the password.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { setTimeout as delay } from 'node:timers/promises';
import {
  createTestCertificates,
  RedisCluster,
  RedisSentinelSet,
  type TestCertificates,
  uniquePrefix,
} from '@herald/testkit';
import { assertPushPop } from '../broker/nodes.js';
import { publishOk, SseStream, subscribeUrl } from '../hub/support.js';
import { type Service, startNode } from '../security/nodes.js';

const DATA_USER = { username: 'app', password: 'data-password-never-printed' };
const SENTINEL_USER = { username: 'watcher', password: 'sentinel-password-never-printed' };
const PASSWORDS = new RegExp(`${DATA_USER.password}|${SENTINEL_USER.password}`);

let certificates: TestCertificates;
before(() => {
  certificates = createTestCertificates();
});

/** Ready, then the service's round trip through Redis: push and pop, or publish and receive. */
async function assertWorks(service: Service, environment: Record<string, string>): Promise<void> {
  const node = await startNode(service, {
    NODE_EXTRA_CA_CERTS: certificates.caFile,
    ...(service === 'hub'
      ? { MERCURE_REDIS_PREFIX: uniquePrefix('tls-hub'), MERCURE_ANONYMOUS: '1' }
      : { BROKER_KEY_PREFIX: uniquePrefix('tls-broker') }),
    ...environment,
  });
  try {
    assert.equal((await fetch(`${node.origin}/readyz`)).status, 200, node.output());
    if (service === 'broker') {
      await assertPushPop(node.origin, 'tls.q');
      return;
    }
    const url = `${node.origin}/.well-known/mercure`;
    const topic = 'https://example.com/tls-topology';
    const subscriber = await SseStream.open(subscribeUrl(url, [['match', topic]]));
    try {
      assert.equal(subscriber.status, 200);
      const id = await publishOk(url, { topic, data: 'over TLS' });
      const [event] = await subscriber.waitForEvents(1);
      assert.deepEqual({ id: event?.id, data: event?.data }, { id, data: 'over TLS' });
    } finally {
      subscriber.close();
    }
  } finally {
    await node.stop();
  }
}

/** Not ready, still not ready after a few reconnect attempts, no password in its output. */
async function assertRefused(service: Service, environment: Record<string, string>): Promise<void> {
  const node = await startNode(
    service,
    { LOG_LEVEL: 'info', NODE_EXTRA_CA_CERTS: certificates.caFile, ...environment },
    { waitReady: false },
  );
  try {
    assert.equal((await fetch(`${node.origin}/readyz`)).status, 503, node.output());
    await delay(1500);
    assert.equal((await fetch(`${node.origin}/readyz`)).status, 503, node.output());
    assert.doesNotMatch(node.output(), PASSWORDS);
    // A few lines per refusal, not a log flood.
    assert.ok(node.output().length < 100_000, `${node.output().length} bytes of log`);
  } finally {
    await node.stop();
  }
}

describe('Sentinel with TLS and ACL users (data servers and sentinels)', () => {
  let set: RedisSentinelSet;
  before(async () => {
    set = await RedisSentinelSet.start({ tls: certificates, user: DATA_USER, sentinelUser: SENTINEL_USER });
  });
  after(async () => {
    await set?.stop();
  });

  const environment = (overrides: Record<string, string> = {}): Record<string, string> => ({
    // By name, as an operator gives it: the sentinels' certificate is checked against `localhost`;
    // the primary is reached at the IP the sentinels announce.
    REDIS_SENTINELS: set.sentinels.map((address) => address.replace('127.0.0.1', 'localhost')).join(','),
    REDIS_SENTINEL_MASTER: set.masterName,
    REDIS_SENTINEL_USERNAME: SENTINEL_USER.username,
    REDIS_SENTINEL_PASSWORD: SENTINEL_USER.password,
    REDIS_USERNAME: DATA_USER.username,
    REDIS_PASSWORD: DATA_USER.password,
    REDIS_TLS: 'true',
    ...overrides,
  });

  for (const service of ['broker', 'hub'] as const) {
    test(`the ${service}: ready, and its round trip goes through the primary`, async () => {
      await assertWorks(service, environment());
    });
  }

  for (const [what, overrides] of [
    ['a wrong data password', { REDIS_PASSWORD: `not-${DATA_USER.password}` }],
    ['a wrong sentinel password', { REDIS_SENTINEL_PASSWORD: `not-${SENTINEL_USER.password}` }],
  ] as const) {
    test(`${what}: the hub and the broker are not ready and never print it`, async () => {
      await Promise.all(
        (['hub', 'broker'] as const).map((service) => assertRefused(service, environment(overrides))),
      );
    });
  }
});

describe('Redis Cluster with TLS (cluster bus and replication too) and an ACL user', () => {
  let cluster: RedisCluster;
  before(async () => {
    cluster = await RedisCluster.start({ tls: certificates, user: DATA_USER });
  });
  after(async () => {
    await cluster?.stop();
  });

  const environment = (overrides: Record<string, string> = {}): Record<string, string> => ({
    // Seeds by name; the nodes announce themselves by IP (CLUSTER SLOTS), and the services
    // reach them there with the same TLS options.
    REDIS_CLUSTER_NODES: cluster.nodes.map((address) => address.replace('127.0.0.1', 'localhost')).join(','),
    REDIS_USERNAME: DATA_USER.username,
    REDIS_PASSWORD: DATA_USER.password,
    REDIS_TLS: 'true',
    ...overrides,
  });

  for (const service of ['broker', 'hub'] as const) {
    test(`the ${service}: ready, and its round trip goes through the shards`, async () => {
      await assertWorks(service, environment());
    });
  }

  test('a wrong password: the hub and the broker are not ready and never print it', async () => {
    await Promise.all(
      (['hub', 'broker'] as const).map((service) =>
        assertRefused(service, environment({ REDIS_PASSWORD: `not-${DATA_USER.password}` })),
      ),
    );
  });
});

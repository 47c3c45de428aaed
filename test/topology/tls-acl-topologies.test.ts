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
import { execFile } from 'node:child_process';
import { after, before, describe, test } from 'node:test';
import { promisify } from 'node:util';
import {
  type AclUser,
  createTestCertificates,
  RedisCluster,
  RedisSentinelSet,
  type TestCertificates,
  uniquePrefix,
  waitFor,
} from '@herald/testkit';
import { assertPushPop } from '../broker/nodes.js';
import { publishOk, SseStream, subscribeUrl } from '../hub/support.js';
import { type Service, startNode } from '../security/nodes.js';

const DATA_USER = { username: 'app', password: 'data-password-never-printed' };
const SENTINEL_USER = { username: 'watcher', password: 'sentinel-password-never-printed' };
const PASSWORDS = new RegExp(`${DATA_USER.password}|${SENTINEL_USER.password}`);
/** Refusals by Redis to wait for once a refused node answered 503: it kept trying, and failing. */
const MORE_REFUSALS = 3;
const run = promisify(execFile);

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

/** A server of the topology (data server, sentinel or cluster node) and the user that reads its INFO. */
interface Server {
  readonly port: number;
  readonly user: AclUser;
}

/** How often the servers have turned a client away: their error replies (a refused AUTH or command). */
async function refusals(servers: readonly Server[]): Promise<number> {
  let total = 0;
  for (const { port, user } of servers) {
    const cli = ['-h', '127.0.0.1', '-p', String(port), '--tls', '--cacert', certificates.caFile];
    const { stdout } = await run('redis-cli', [...cli, '--user', user.username, 'INFO', 'stats'], {
      env: { ...process.env, REDISCLI_AUTH: user.password },
      encoding: 'utf8',
      timeout: 5000,
    });
    const errorReplies = /^total_error_replies:(\d+)/m.exec(stdout)?.[1];
    assert.ok(errorReplies !== undefined, `no total_error_replies in INFO stats of ${port}:\n${stdout}`);
    total += Number(errorReplies);
  }
  return total;
}

/**
 * Not ready, still not ready after a few more attempts each refused by `servers`, no password in
 * its output. One node at a time: the servers' count does not tell nodes apart.
 */
async function assertRefused(
  service: Service,
  environment: Record<string, string>,
  servers: readonly Server[],
): Promise<void> {
  const node = await startNode(
    service,
    { LOG_LEVEL: 'info', NODE_EXTRA_CA_CERTS: certificates.caFile, ...environment },
    { waitReady: false },
  );
  try {
    assert.equal((await fetch(`${node.origin}/readyz`)).status, 503, node.output());
    const refused = await refusals(servers);
    await waitFor(async () => (await refusals(servers)) >= refused + MORE_REFUSALS, {
      what: `the ${service}'s attempts to be refused ${MORE_REFUSALS} more times`,
      timeoutMs: 30_000,
      intervalMs: 100,
    });
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
  const servers = (): Server[] => [
    ...set.serverPorts.map((port) => ({ port, user: DATA_USER })),
    ...set.sentinels.map((address) => ({ port: Number(address.split(':')[1]), user: SENTINEL_USER })),
  ];

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
      for (const service of ['hub', 'broker'] as const) {
        await assertRefused(service, environment(overrides), servers());
      }
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
    const servers = cluster.livePorts.map((port) => ({ port, user: DATA_USER }));
    for (const service of ['hub', 'broker'] as const) {
      await assertRefused(service, environment({ REDIS_PASSWORD: `not-${DATA_USER.password}` }), servers);
    }
  });
});

/*
 * The Sentinel set and the Cluster started with `tls` and `user` are what the topology tests
 * take them for (issue #12): TLS only (a plain connection gets no PONG), `default` may PING and
 * nothing else, and the ACL user over TLS reads and writes, replicas in sync (replication on
 * TLS, authenticated with `masteruser`).
 */
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { after, before, describe, test } from 'node:test';
import { Cluster, Redis } from 'ioredis';
import {
  createTestCertificates,
  RedisCluster,
  RedisSentinelSet,
  type TestCertificates,
} from '../src/index.js';
import { pingPort } from '../src/redis-process.js';

const USER = { username: 'app', password: 'app-password' };
const SENTINEL_USER = { username: 'watcher', password: 'watcher-password' };

let certificates: TestCertificates;
let tls: { ca: Buffer };
before(() => {
  certificates = createTestCertificates();
  tls = { ca: readFileSync(certificates.caFile) };
});

function portOf(address: string): number {
  return Number(address.split(':')[1]);
}

/** As `default`, on TLS: PING answers, any other command is refused with NOPERM. */
async function assertDefaultMayOnlyPing(port: number, command: string, ...args: string[]): Promise<void> {
  const client = new Redis({
    port,
    host: '127.0.0.1',
    tls,
    lazyConnect: true,
    maxRetriesPerRequest: 0,
    // Its INFO would be refused too.
    enableReadyCheck: false,
  });
  client.on('error', () => undefined);
  try {
    await client.connect();
    assert.equal(await client.ping(), 'PONG');
    await assert.rejects(client.call(command, ...args), /NOPERM/);
  } finally {
    client.disconnect();
  }
}

describe('a Sentinel set with TLS and ACL users', () => {
  let set: RedisSentinelSet;
  before(async () => {
    set = await RedisSentinelSet.start({ tls: certificates, user: USER, sentinelUser: SENTINEL_USER });
  });
  after(async () => {
    await set?.stop();
  });

  test('TLS only, servers and sentinels alike; default may only PING', async () => {
    const sentinelPort = portOf(set.sentinels[0] as string);
    const primary = await set.primary();
    assert.equal(await pingPort(primary), false, 'a plain connection to a server');
    assert.equal(await pingPort(sentinelPort), false, 'a plain connection to a sentinel');
    assert.equal(await pingPort(primary, { caFile: certificates.caFile }), true);
    await assertDefaultMayOnlyPing(primary, 'get', 'key');
    await assertDefaultMayOnlyPing(sentinelPort, 'sentinel', 'get-master-addr-by-name', set.masterName);
  });

  test('the users over TLS: writes on the primary reach both replicas', async () => {
    const redis = new Redis({
      sentinels: set.sentinels.map((address) => ({ host: '127.0.0.1', port: portOf(address) })),
      name: set.masterName,
      sentinelUsername: SENTINEL_USER.username,
      sentinelPassword: SENTINEL_USER.password,
      username: USER.username,
      password: USER.password,
      tls,
      sentinelTLS: tls,
      enableTLSForSentinelMode: true,
      maxRetriesPerRequest: null,
    });
    try {
      await redis.set('greeting', 'hello');
      assert.equal(await redis.wait(2, 5000), 2);
      assert.match(await redis.info('replication'), /connected_slaves:2/);
    } finally {
      redis.disconnect();
    }
  });
});

describe('a Redis Cluster with TLS and an ACL user', () => {
  let cluster: RedisCluster;
  before(async () => {
    cluster = await RedisCluster.start({ tls: certificates, user: USER });
  });
  after(async () => {
    await cluster?.stop();
  });

  test('TLS only; default may only PING', async () => {
    const [first] = await cluster.primaries();
    const port = first?.port as number;
    assert.equal(await pingPort(port), false, 'a plain connection to a node');
    await assertDefaultMayOnlyPing(port, 'get', 'key');
  });

  test('the user over TLS: the nodes announce their TLS ports, writes reach every shard and its replica', async () => {
    const redis = new Cluster(
      cluster.nodes.map((address) => ({ host: '127.0.0.1', port: portOf(address) })),
      {
        scaleReads: 'master',
        redisOptions: { username: USER.username, password: USER.password, tls, maxRetriesPerRequest: null },
      },
    );
    try {
      const keys = ['alpha', 'beta', 'gamma', 'delta', 'epsilon', 'zeta'];
      for (const key of keys) await redis.set(key, key);
      const primaries = await cluster.primaries();
      const owners = new Set(await Promise.all(keys.map((key) => cluster.primaryForKey(key))));
      assert.equal(owners.size, primaries.length, 'the keys span every shard');
      const connections = redis.nodes('master');
      assert.equal(connections.length, primaries.length);
      for (const primary of connections) {
        // Its replica acknowledges what it was sent: replication runs, on TLS, as the user.
        assert.equal(await primary.call('wait', '1', '5000'), 1, `replica of ${primary.options.port}`);
      }
    } finally {
      redis.disconnect();
    }
  });
});

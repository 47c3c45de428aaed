/*
 * Lua key discipline of the hub's scripts (issue #12, item 1; docs/hub.md, "Lua key discipline"):
 * every key a script touches is a declared KEYS[i] (so a Redis Cluster can route the call and
 * refuse nothing), checked by the one checker both services run (`@herald/testkit/lua`, which
 * parses each script and follows every key back to KEYS; headers and key counts are checked in
 * lua-scripts.test.ts); and the keys of one call share one hash tag (one slot), checked on the
 * calls a running transport makes.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { createMetrics } from '@herald/metrics';
import { loadScripts } from '@herald/redis';
import { RedisMonitor, RedisServer, uniquePrefix, waitFor } from '@herald/testkit';
import { scanScripts } from '@herald/testkit/lua';
import { Redis } from 'ioredis';
import { LUA_DIRECTORY, RedisTransport } from '../src/transport-redis.js';

describe('hub Lua scripts declare every key', () => {
  test('every key and channel of every hub script is a declared KEYS[i]', () => {
    const violations = scanScripts(loadScripts(LUA_DIRECTORY).values());
    assert.deepEqual(
      violations.map(({ script, line, command, message }) => `${script}:${line} ${command}: ${message}`),
      [],
    );
  });
});

/** The hash tag Redis Cluster hashes (the whole key when it has none). */
function hashTagOf(key: string): string {
  const open = key.indexOf('{');
  if (open === -1) return key;
  const close = key.indexOf('}', open + 1);
  if (close <= open + 1) return key;
  return key.slice(open + 1, close);
}

describe('each script call keeps its keys in one slot (redis)', () => {
  let server: RedisServer;
  let monitor: RedisMonitor;
  let admin: Redis;
  const calls: string[][] = [];

  before(async () => {
    server = await RedisServer.start();
    admin = new Redis(server.url);
    monitor = await RedisMonitor.start(server.url, (args) => {
      const name = args[0]?.toUpperCase();
      if (name === 'EVALSHA' || name === 'EVAL') calls.push([...args]);
    });
  });
  after(async () => {
    monitor.stop();
    admin.disconnect();
    await server.destroy();
  });

  test('publishes in several partitions, lookups, lease renewal and a reap', async () => {
    const prefix = uniquePrefix('hub-keys');
    const transport = new RedisTransport({
      url: server.url,
      prefix,
      historySize: 100,
      historyTtl: 0,
      partitions: 8,
      metrics: createMetrics(),
      subscriptions: true,
      subscriptionsLease: 1000,
    });
    await transport.start(() => undefined);
    try {
      const topics = Array.from({ length: 12 }, (_, index) => `https://example.com/keys/${index}`);
      await transport.publish({ id: 'urn:keys:1', topics, data: 'd', private: false });
      await transport.findPosition('urn:keys:1');
      await transport.addSubscriptions([{ id: 's1', matchType: 'exact', match: 't', subscriber: 'u' }]);
      // A departed node's lease, so the reap runs for it.
      await admin.zadd(`${prefix}{hub}:node-leases`, 1, 'departed-node');
      await waitFor(
        async () => (await admin.zscore(`${prefix}{hub}:node-leases`, 'departed-node')) === null,
        {
          what: 'the departed node to be reaped',
        },
      );
    } finally {
      await transport.stop();
    }
    await waitFor(() => calls.length >= 12, { what: 'the monitor to report the script calls' });
    const partitionTags = new Set<string>();
    for (const args of calls) {
      const keyCount = Number(args[2]);
      const keys = args.slice(3, 3 + keyCount);
      const tags = new Set(keys.map(hashTagOf));
      assert.equal(tags.size, 1, `one hash tag per call: ${keys.join(' ')}`);
      for (const tag of tags) partitionTags.add(tag);
    }
    // The publish touched several partitions, each under its own tag.
    assert.ok(partitionTags.size > 2, [...partitionTags].join(', '));
  });
});

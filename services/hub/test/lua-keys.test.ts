/*
 * Lua key discipline of the hub's scripts (issue #12, item 1; docs/hub.md, "Lua key discipline"):
 * every key a script touches is a declared KEYS[i] (so a Redis Cluster can route the call and
 * refuse nothing), declared in the file's header, as many as its file name says; and the keys of
 * one call share one hash tag (one slot), checked on the calls a running transport makes.
 *
 * The scanner is small on purpose: every `redis.call('<COMMAND>', …)` must name a command of the
 * table below, which says whether its first argument is a key (or a channel, which on Cluster is
 * routed like one). A script using a command the table does not know fails until the table says
 * what it is.
 */
import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { createMetrics } from '@herald/metrics';
import { RedisServer, uniquePrefix, waitFor } from '@herald/testkit';
import { Redis } from 'ioredis';
import { LUA_DIRECTORY, RedisTransport } from '../src/transport-redis.js';

/** Commands whose first argument is a key or a channel. */
const KEYED = new Set([
  'DEL',
  'EXISTS',
  'HDEL',
  'HGET',
  'HSET',
  'LRANGE',
  'PEXPIRE',
  'PUBLISH',
  'RPUSH',
  'SMEMBERS',
  'SPUBLISH',
  'XADD',
  'XRANGE',
  'XTRIM',
  'ZADD',
  'ZRANGEBYSCORE',
  'ZREM',
  'ZSCORE',
]);
/** Commands that touch no key. */
const KEYLESS = new Set(['TIME']);

interface Call {
  readonly line: number;
  readonly command: string;
  readonly firstArgument: string;
}

function callsIn(source: string): Call[] {
  const calls: Call[] = [];
  for (const [index, text] of source.split('\n').entries()) {
    const code = text.replace(/--.*$/, '');
    for (const match of code.matchAll(/redis\.p?call\(\s*(['"])(\w+)\1\s*(?:,\s*([^,)]+))?/g)) {
      calls.push({
        line: index + 1,
        command: (match[2] as string).toUpperCase(),
        firstArgument: (match[3] ?? '').trim(),
      });
    }
    if (/redis\.p?call\(\s*[^'"\s]/.test(code)) {
      calls.push({ line: index + 1, command: '<computed>', firstArgument: '' });
    }
  }
  return calls;
}

/** Problems of one script: undeclared or computed keys, a header that does not match. */
function keyProblems(file: string, source: string): string[] {
  const problems: string[] = [];
  const declaredCount = Number(/-(\d+)\.lua$/.exec(file)?.[1]);
  const headerKeys = new Set(
    [...source.matchAll(/^--\s*KEYS\[(\d+)\]/gm)].map((match) => Number(match[1] as string)),
  );
  for (let index = 1; index <= declaredCount; index++) {
    if (!headerKeys.has(index)) problems.push(`${file}: KEYS[${index}] is not described in the header`);
  }
  for (const match of source.replace(/--.*$/gm, '').matchAll(/KEYS\[(\d+)\]/g)) {
    const index = Number(match[1] as string);
    if (index < 1 || index > declaredCount)
      problems.push(`${file}: uses KEYS[${index}] but its name declares ${declaredCount} keys`);
  }
  for (const call of callsIn(source)) {
    const where = `${file}:${call.line} ${call.command}`;
    if (KEYLESS.has(call.command)) continue;
    if (!KEYED.has(call.command)) {
      problems.push(`${where}: command not in the scanner's table (say whether it takes a key)`);
      continue;
    }
    if (!/^KEYS\[\d+\]$/.test(call.firstArgument))
      problems.push(`${where}: key or channel "${call.firstArgument}" is not a declared KEYS[i]`);
  }
  return problems;
}

describe('hub Lua scripts declare every key', () => {
  const files = readdirSync(LUA_DIRECTORY).filter((file) => file.endsWith('.lua'));

  test('the scripts are found', () => {
    assert.ok(files.includes('publish-4.lua') && files.includes('reap-4.lua'), files.join(', '));
  });

  for (const file of files) {
    test(file, () => {
      assert.deepEqual(keyProblems(file, readFileSync(join(LUA_DIRECTORY, file), 'utf8')), []);
    });
  }

  test('the scanner catches a key built inside a script, a computed command and an unknown one', () => {
    const source = [
      '-- KEYS[1] a set',
      "redis.call('SMEMBERS', KEYS[1])",
      "redis.call('DEL', ARGV[1] .. 'x')",
      "redis.call('PUBLISH', ARGV[2], 'm')",
      'redis.call(ARGV[3], KEYS[1])',
      "redis.call('SUNIONSTORE', KEYS[1], KEYS[1])",
      "redis.call('HGET', KEYS[2], 'f')",
    ].join('\n');
    assert.deepEqual(keyProblems('bad-1.lua', source), [
      'bad-1.lua: uses KEYS[2] but its name declares 1 keys',
      'bad-1.lua:3 DEL: key or channel "ARGV[1] .. \'x\'" is not a declared KEYS[i]',
      'bad-1.lua:4 PUBLISH: key or channel "ARGV[2]" is not a declared KEYS[i]',
      "bad-1.lua:5 <computed>: command not in the scanner's table (say whether it takes a key)",
      "bad-1.lua:6 SUNIONSTORE: command not in the scanner's table (say whether it takes a key)",
    ]);
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
  let monitor: Awaited<ReturnType<Redis['monitor']>>;
  let admin: Redis;
  const calls: string[][] = [];

  before(async () => {
    server = await RedisServer.start();
    admin = new Redis(server.url);
    monitor = await admin.monitor();
    monitor.on('monitor', (_time: string, args: string[]) => {
      const name = args[0]?.toUpperCase();
      if (name === 'EVALSHA' || name === 'EVAL') calls.push(args);
    });
  });
  after(async () => {
    monitor.disconnect();
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

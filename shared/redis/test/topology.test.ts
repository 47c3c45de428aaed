/*
 * The one Redis configuration surface of both services (issue #12): which variables make which
 * topology, which combinations are refused, and that no message ever carries a password.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { ConfigError, parseEnv } from '@herald/config';
import {
  describeTopology,
  parseRedisOptions,
  type RedisTopology,
  redisSettings,
  redisTopologyFromEnv,
} from '../src/index.js';

const SECRET = 's3cr3t-Pa55';

const accepted: readonly [string, Record<string, string>, RedisTopology | undefined][] = [
  ['nothing set: the in-process backend', {}, undefined],
  ['blank values count as unset', { REDIS_URL: '  ', REDIS_CLUSTER_NODES: '' }, undefined],
  [
    'a redis:// URL',
    { REDIS_URL: 'redis://127.0.0.1:6379/2' },
    { kind: 'standalone', url: 'redis://127.0.0.1:6379/2' },
  ],
  [
    'a rediss:// URL with credentials',
    { REDIS_URL: `rediss://app:${SECRET}@redis.example:6380` },
    { kind: 'standalone', url: `rediss://app:${SECRET}@redis.example:6380` },
  ],
  [
    'sentinels with a master name, default port, IPv6',
    { REDIS_SENTINELS: 'sentinel-0:26380, sentinel-1 ,[::1]:26381', REDIS_SENTINEL_MASTER: 'mymaster' },
    {
      kind: 'sentinel',
      sentinels: [
        { host: 'sentinel-0', port: 26380 },
        { host: 'sentinel-1', port: 26379 },
        { host: '::1', port: 26381 },
      ],
      masterName: 'mymaster',
      tls: false,
    },
  ],
  [
    'sentinels with every credential and TLS',
    {
      REDIS_SENTINELS: '10.0.0.1:26379',
      REDIS_SENTINEL_MASTER: 'm',
      REDIS_SENTINEL_USERNAME: 'watcher',
      REDIS_SENTINEL_PASSWORD: SECRET,
      REDIS_USERNAME: 'app',
      REDIS_PASSWORD: SECRET,
      REDIS_TLS: 'true',
    },
    {
      kind: 'sentinel',
      sentinels: [{ host: '10.0.0.1', port: 26379 }],
      masterName: 'm',
      sentinelUsername: 'watcher',
      sentinelPassword: SECRET,
      username: 'app',
      password: SECRET,
      tls: true,
    },
  ],
  [
    'cluster seed nodes, default port',
    { REDIS_CLUSTER_NODES: 'redis-0:7000,redis-1' },
    {
      kind: 'cluster',
      nodes: [
        { host: 'redis-0', port: 7000 },
        { host: 'redis-1', port: 6379 },
      ],
      tls: false,
    },
  ],
  [
    'cluster with credentials and TLS',
    {
      REDIS_CLUSTER_NODES: 'clustercfg.example.cache.amazonaws.com:6379',
      REDIS_PASSWORD: SECRET,
      REDIS_TLS: '1',
    },
    {
      kind: 'cluster',
      nodes: [{ host: 'clustercfg.example.cache.amazonaws.com', port: 6379 }],
      password: SECRET,
      tls: true,
    },
  ],
];

for (const [name, environment, expected] of accepted) {
  test(`accepted: ${name}`, () => {
    assert.deepEqual(redisTopologyFromEnv(environment), expected);
  });
}

const refused: readonly [string, Record<string, string>, string, RegExp][] = [
  [
    'REDIS_URL and REDIS_SENTINELS',
    { REDIS_URL: 'redis://a', REDIS_SENTINELS: 'b:1', REDIS_SENTINEL_MASTER: 'm' },
    'REDIS_SENTINELS',
    /set together with REDIS_URL; set exactly one of/,
  ],
  [
    'REDIS_URL and REDIS_CLUSTER_NODES',
    { REDIS_URL: 'redis://a', REDIS_CLUSTER_NODES: 'b:1' },
    'REDIS_CLUSTER_NODES',
    /exactly one/,
  ],
  [
    'REDIS_SENTINELS and REDIS_CLUSTER_NODES',
    { REDIS_SENTINELS: 'a:1', REDIS_SENTINEL_MASTER: 'm', REDIS_CLUSTER_NODES: 'b:1' },
    'REDIS_CLUSTER_NODES',
    /exactly one/,
  ],
  ['sentinels without a master name', { REDIS_SENTINELS: 'a:1' }, 'REDIS_SENTINEL_MASTER', /is required/],
  [
    'a master name without sentinels',
    { REDIS_SENTINEL_MASTER: 'm' },
    'REDIS_SENTINEL_MASTER',
    /no Redis is configured/,
  ],
  [
    'a sentinel password with a cluster',
    { REDIS_CLUSTER_NODES: 'a:1', REDIS_SENTINEL_PASSWORD: SECRET },
    'REDIS_SENTINEL_PASSWORD',
    /applies to REDIS_SENTINELS only/,
  ],
  [
    'a data password with REDIS_URL',
    { REDIS_URL: 'redis://a', REDIS_PASSWORD: SECRET },
    'REDIS_PASSWORD',
    /credentials go in the URL/,
  ],
  ['REDIS_TLS with REDIS_URL', { REDIS_URL: 'redis://a', REDIS_TLS: 'true' }, 'REDIS_TLS', /rediss:\/\//],
  [
    'a command deadline below 50 ms',
    { REDIS_URL: 'redis://a', REDIS_COMMAND_TIMEOUT: '10' },
    'REDIS_COMMAND_TIMEOUT',
    /from 50 to 60000 ms/,
  ],
  [
    'a command deadline above a minute',
    { REDIS_URL: 'redis://a', REDIS_COMMAND_TIMEOUT: '2m' },
    'REDIS_COMMAND_TIMEOUT',
    /from 50 to 60000 ms/,
  ],
  ['a password and no Redis', { REDIS_PASSWORD: SECRET }, 'REDIS_PASSWORD', /no Redis is configured/],
  [
    'REDIS_TLS not a boolean',
    { REDIS_CLUSTER_NODES: 'a:1', REDIS_TLS: 'yes' },
    'REDIS_TLS',
    /expected true, false/,
  ],
  [
    'an http:// URL',
    { REDIS_URL: `http://u:${SECRET}@a` },
    'REDIS_URL',
    /expected redis:\/\/ or rediss:\/\/, got http:/,
  ],
  ['not a URL', { REDIS_URL: `${SECRET}@@` }, 'REDIS_URL', /expected a redis:\/\/ or rediss:\/\/ URL/],
  // Issue #13: what is wrong, in words, and never the password.
  [
    'redis// without the colon',
    { REDIS_URL: `redis//:${SECRET}@localhost` },
    'REDIS_URL',
    /":\/\/" is missing after the scheme/,
  ],
  [
    'a URL port out of range',
    { REDIS_URL: `redis://:${SECRET}@localhost:99999` },
    'REDIS_URL',
    /the port 99999 is out of range \(1-65535\)/,
  ],
  [
    'a URL port not a number',
    { REDIS_URL: `redis://:${SECRET}@localhost:port` },
    'REDIS_URL',
    /port is not a number/,
  ],
  [
    'a port out of range',
    { REDIS_CLUSTER_NODES: 'a:1,b:70000' },
    'REDIS_CLUSTER_NODES',
    /item 2 of 2 is not host:port/,
  ],
  ['a port of 0', { REDIS_SENTINELS: 'a:0', REDIS_SENTINEL_MASTER: 'm' }, 'REDIS_SENTINELS', /item 1 of 1/],
  ['not a port', { REDIS_CLUSTER_NODES: 'a:port' }, 'REDIS_CLUSTER_NODES', /is not host:port/],
  [
    'a URL pasted as a seed node',
    { REDIS_CLUSTER_NODES: `redis://app:${SECRET}@a:6379` },
    'REDIS_CLUSTER_NODES',
    /is not host:port/,
  ],
  [
    'only commas',
    { REDIS_CLUSTER_NODES: ' , ,' },
    'REDIS_CLUSTER_NODES',
    /expected a comma-separated list of host:port/,
  ],
];

for (const [name, environment, variable, reason] of refused) {
  test(`refused: ${name}, naming ${variable}, never the password`, () => {
    const error = (() => {
      try {
        redisTopologyFromEnv(environment);
      } catch (error) {
        return error;
      }
      return assert.fail('accepted');
    })();
    assert.ok(error instanceof ConfigError, String(error));
    assert.equal(error.variable, variable);
    assert.ok(error.message.startsWith(`${variable}: `), error.message);
    assert.match(error.message, reason);
    assert.doesNotMatch(error.message, new RegExp(SECRET));
    assert.doesNotMatch(error.message, /\n/);
  });
}

test('parseRedisOptions, the standalone shortcut, applies the same URL rule', () => {
  assert.throws(
    () => parseRedisOptions(`ftp://u:${SECRET}@a`),
    (error: unknown) => {
      assert.ok(error instanceof ConfigError);
      assert.doesNotMatch(error.message, new RegExp(SECRET));
      return true;
    },
  );
});

test('a topology is described for logs without credentials', () => {
  const described = [
    redisTopologyFromEnv({ REDIS_URL: `rediss://app:${SECRET}@redis.example:6380/1` }),
    redisTopologyFromEnv({
      REDIS_SENTINELS: 'a:1,[::1]:2',
      REDIS_SENTINEL_MASTER: 'm',
      REDIS_PASSWORD: SECRET,
    }),
    redisTopologyFromEnv({ REDIS_CLUSTER_NODES: 'a:1,b', REDIS_PASSWORD: SECRET }),
  ].map((topology) => describeTopology(topology as RedisTopology));
  assert.deepEqual(described, [
    'redis.example:6380',
    'sentinel master m via a:1,[::1]:2',
    'cluster a:1,b:6379',
  ]);
});

test('REDIS_COMMAND_TIMEOUT: a duration, unset by default (each service then keeps its own)', () => {
  assert.equal(parseEnv(redisSettings, { REDIS_COMMAND_TIMEOUT: '2s' }).REDIS_COMMAND_TIMEOUT, 2000);
  assert.equal(parseEnv(redisSettings, { REDIS_COMMAND_TIMEOUT: '750' }).REDIS_COMMAND_TIMEOUT, 750);
  assert.equal(parseEnv(redisSettings, {}).REDIS_COMMAND_TIMEOUT, undefined);
});

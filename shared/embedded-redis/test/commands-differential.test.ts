/*
 * The embedded engine behaves like Redis, command by command: each case runs the same commands
 * on a real Redis and on the embedded server (through ioredis, as the services talk to both)
 * and compares every reply, errors included. Keys carry one prefix on both sides, so replies
 * naming keys are equal too. Cases cover every command the services' scripts and storage code
 * send, the edges of their arguments, and Lua 5.1's conversions inside EVAL.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { stopTestRedis, testRedisUrl, uniquePrefix } from '@herald/testkit';
import { Redis } from 'ioredis';
import { EmbeddedRedis } from '../src/index.js';

type Step = readonly (string | number)[];

/** `{p}` in an argument is the key prefix. Replies are compared after every step. */
const CASES: Record<string, readonly Step[]> = {
  'strings: SET options, GET, INCR, TTL': [
    ['SET', '{p}s', 'a'],
    ['GET', '{p}s'],
    ['SET', '{p}s', 'b', 'NX'],
    ['SET', '{p}s', 'b', 'XX', 'GET'],
    ['SET', '{p}missing', 'c', 'XX'],
    ['SET', '{p}t', '1', 'PX', 100000],
    ['PTTL', '{p}missing'],
    ['TTL', '{p}s'],
    ['INCR', '{p}t'],
    ['INCRBY', '{p}t', -5],
    ['INCR', '{p}s'],
    ['SET', '{p}s', 'x', 'EX', 0],
    ['SET', '{p}s', 'x', 'PX'],
    ['SET', '{p}s'],
    ['GET', '{p}h'],
    ['EXISTS', '{p}s', '{p}t', '{p}missing', '{p}s'],
    ['DEL', '{p}s', '{p}missing'],
    ['UNLINK', '{p}t'],
    ['TYPE', '{p}t'],
  ],
  'expiry: PEXPIRE, PEXPIREAT in the past, EXPIRE on a missing key': [
    ['HSET', '{p}e', 'f', 'v'],
    ['PEXPIRE', '{p}e', 100000],
    ['EXPIRE', '{p}missing', 10],
    ['PEXPIREAT', '{p}e', 1],
    ['EXISTS', '{p}e'],
    ['SET', '{p}o', 'v'],
    ['EXPIRE', '{p}o', 100, 'XX'],
    ['EXPIRE', '{p}o', 100, 'GT'],
    ['EXPIRE', '{p}o', 100, 'LT'],
    ['PEXPIRE', '{p}o', 50000, 'NX'],
    ['PEXPIRE', '{p}o', 60000, 'NX'],
    ['PEXPIRE', '{p}o', 40000, 'GT'],
    ['PEXPIRE', '{p}o', 70000, 'GT'],
    ['PEXPIRE', '{p}o', 80000, 'XX', 'LT'],
    ['EXPIRE', '{p}o', 10, 'NX', 'XX'],
    ['EXPIRE', '{p}o', 10, 'GT', 'LT'],
    ['EXPIRE', '{p}o', 10, 'SOON'],
    ['EXPIRE', '{p}missing', 10, 'NX'],
    ['SET', '{p}e2', 'v', 'PX', 50000],
    ['SET', '{p}e2', 'w'],
    ['PTTL', '{p}e2'],
  ],
  'hashes: HSET, HSETNX, HMGET, HINCRBY, HDEL to empty, wrong types': [
    ['HSET', '{p}h', 'a', '1', 'b', '2'],
    ['HSET', '{p}h', 'a', '3', 'c', '4'],
    ['HSET', '{p}h', 'odd'],
    ['HSETNX', '{p}h', 'a', '9'],
    ['HSETNX', '{p}h', 'z', '9'],
    ['HGET', '{p}h', 'a'],
    ['HMGET', '{p}h', 'a', 'nope', 'c'],
    ['HGETALL', '{p}h'],
    ['HKEYS', '{p}h'],
    ['HVALS', '{p}h'],
    ['HLEN', '{p}h'],
    ['HEXISTS', '{p}h', 'b'],
    ['HINCRBY', '{p}h', 'a', 10],
    ['HINCRBY', '{p}h', 'new', -2],
    ['HINCRBY', '{p}h', 'a', '1.5'],
    ['HSET', '{p}h', 'text', 'x'],
    ['HINCRBY', '{p}h', 'text', 1],
    ['HDEL', '{p}h', 'a', 'b', 'c', 'z', 'new', 'text', 'nope'],
    ['EXISTS', '{p}h'],
    ['HGETALL', '{p}h'],
    ['SET', '{p}str', 'v'],
    ['HGET', '{p}str', 'f'],
    ['HSET', '{p}str', 'f', 'v'],
    ['SADD', '{p}str', 'm'],
    ['ZADD', '{p}str', 1, 'm'],
    ['XADD', '{p}str', '1-1', 'f', 'v'],
    ['GET', '{p}h2'],
  ],
  'sets: SADD, SREM to empty, SCARD, SISMEMBER, SMISMEMBER': [
    ['SADD', '{p}set', 'a', 'b', 'a'],
    ['SCARD', '{p}set'],
    ['SISMEMBER', '{p}set', 'a'],
    ['SISMEMBER', '{p}set', 'z'],
    ['SMISMEMBER', '{p}set', 'a', 'z', 'b'],
    ['SREM', '{p}set', 'a', 'z'],
    ['SMEMBERS', '{p}set'],
    ['SREM', '{p}set', 'b'],
    ['EXISTS', '{p}set'],
    ['SMEMBERS', '{p}set'],
  ],
  'sorted sets: ZADD flags, ranges by score and index, LIMIT, exclusive bounds': [
    ['ZADD', '{p}z', 3, 'c', 1, 'a', 2, 'b', 2, 'bb', 1.5, 'ab'],
    ['ZADD', '{p}z', 'NX', 5, 'a', 6, 'd'],
    ['ZADD', '{p}z', 'XX', 'CH', 0, 'a', 9, 'zz'],
    ['ZADD', '{p}z', 'GT', 'CH', -1, 'a', 10, 'd'],
    ['ZADD', '{p}z', 'NX', 'XX', 1, 'a'],
    ['ZADD', '{p}z', 1],
    ['ZADD', '{p}z', 'x', 'a'],
    ['ZADD', '{p}z', 'INCR', 2, 'a'],
    ['ZSCORE', '{p}z', 'a'],
    ['ZSCORE', '{p}z', 'nope'],
    ['ZCARD', '{p}z'],
    ['ZRANGE', '{p}z', 0, -1, 'WITHSCORES'],
    ['ZRANGE', '{p}z', 0, 0, 'WITHSCORES'],
    ['ZRANGE', '{p}z', -2, -1],
    ['ZRANGE', '{p}z', 5, 2],
    ['ZREVRANGE', '{p}z', 0, 1],
    ['ZRANGEBYSCORE', '{p}z', '-inf', '+inf'],
    ['ZRANGEBYSCORE', '{p}z', '(1.5', 3, 'WITHSCORES'],
    ['ZRANGEBYSCORE', '{p}z', '-inf', 2, 'LIMIT', 1, 2],
    ['ZRANGEBYSCORE', '{p}z', '-inf', 2, 'LIMIT', 0, -1],
    ['ZRANGEBYSCORE', '{p}z', 'a', 2],
    ['ZREVRANGEBYSCORE', '{p}z', '+inf', '(2'],
    ['ZCOUNT', '{p}z', 2, '+inf'],
    ['ZINCRBY', '{p}z', 0.5, 'b'],
    ['ZREMRANGEBYSCORE', '{p}z', '-inf', '(2.5'],
    ['ZREM', '{p}z', 'c', 'nope'],
    ['ZRANGE', '{p}z', 0, -1, 'WITHSCORES'],
    ['ZADD', '{p}r', 1, 'a', 2, 'b', 3, 'c', 4, 'd'],
    ['ZREMRANGEBYRANK', '{p}r', 0, -3],
    ['ZREMRANGEBYRANK', '{p}r', 5, 9],
    ['ZRANGE', '{p}r', 0, -1],
    ['ZREM', '{p}z', 'd'],
    ['EXISTS', '{p}z'],
    ['ZADD', '{p}f', 0.1, 'x', 1e20, 'y', -0.25, 'w'],
    ['ZRANGE', '{p}f', 0, -1, 'WITHSCORES'],
  ],
  'streams: XADD ids, XRANGE bounds and COUNT, XREVRANGE, XDEL, XTRIM, XLEN': [
    ['XADD', '{p}x', '5-1', 'f', 'a'],
    ['XADD', '{p}x', '5-1', 'f', 'dup'],
    ['XADD', '{p}x', '5-*', 'f', 'b'],
    ['XADD', '{p}x', '4-*', 'f', 'old'],
    ['XADD', '{p}x', '7-*', 'f', 'c', 'g', 'd'],
    ['XADD', '{p}x', '9', 'f', 'e'],
    ['XADD', '{p}x', '0-0', 'f', 'zero'],
    ['XADD', '{p}x', '10-0', 'odd'],
    ['XADD', '{p}missing', 'NOMKSTREAM', '*', 'f', 'v'],
    ['XLEN', '{p}x'],
    ['XRANGE', '{p}x', '-', '+'],
    ['XRANGE', '{p}x', '5', '5'],
    ['XRANGE', '{p}x', '(5-1', '+', 'COUNT', 2],
    ['XRANGE', '{p}x', '-', '(7-0'],
    ['XRANGE', '{p}x', '-', '+', 'COUNT', 0],
    ['XRANGE', '{p}x', 'bad', '+'],
    ['XRANGE', '{p}x', '-', '6-18446744073709551615'],
    ['XRANGE', '{p}x', '(5-18446744073709551615', '+'],
    ['XRANGE', '{p}x', '-', '6-18446744073709551616'],
    ['XREVRANGE', '{p}x', '+', '-', 'COUNT', 2],
    ['XREVRANGE', '{p}x', '7', '5-2'],
    ['XDEL', '{p}x', '5-2', '8-0'],
    ['XTRIM', '{p}x', 'MINID', '7-0'],
    ['XRANGE', '{p}x', '-', '+'],
    ['XTRIM', '{p}x', 'MAXLEN', 1],
    ['XADD', '{p}x', 'MAXLEN', 1, '11-0', 'f', 'g'],
    ['XRANGE', '{p}x', '-', '+'],
    ['XTRIM', '{p}x', 'MAXLEN', 0],
    ['XLEN', '{p}x'],
    ['EXISTS', '{p}x'],
    ['XADD', '{p}x', '12-0', 'f', 'after trim'],
    ['XADD', '{p}x', '11-5', 'f', 'below last id'],
  ],
  'lists: RPUSH, LPUSH, LRANGE, LTRIM': [
    ['RPUSH', '{p}l', 'a', 'b', 'c'],
    ['LPUSH', '{p}l', 'z'],
    ['LRANGE', '{p}l', 0, -1],
    ['LRANGE', '{p}l', -2, 10],
    ['LTRIM', '{p}l', 1, 2],
    ['LLEN', '{p}l'],
    ['LTRIM', '{p}l', 5, 6],
    ['EXISTS', '{p}l'],
  ],
  'arity and unknown commands': [['HGET', '{p}h'], ['XLEN'], ['NOSUCHCOMMAND', 'x']],
  'EVAL: replies to Lua and back, Lua 5.1 numbers, errors': [
    ['SET', '{p}n', '10'],
    [
      'EVAL',
      "return {tostring(10/2), 10/4, tostring(2^53), tostring(1e15), string.format('%.0f', 2.5), 7 % -3, 'a' .. 10/2, tostring(-0.0), tostring(tonumber('1e2'))}",
      0,
    ],
    [
      'EVAL',
      "return {redis.call('GET', KEYS[1]), redis.call('GET', KEYS[2]), ARGV[1], #ARGV}",
      2,
      '{p}n',
      '{p}none',
      'x',
    ],
    ['EVAL', "return redis.call('SET', KEYS[1], 5.5)", 1, '{p}n'],
    ['GET', '{p}n'],
    ['EVAL', "return redis.call('SET', KEYS[1], 1e15)", 1, '{p}n'],
    ['GET', '{p}n'],
    ['EVAL', "return redis.call('SET', KEYS[1], 1700000000123)", 1, '{p}n'],
    ['GET', '{p}n'],
    ['EVAL', 'return {1, 2, nil, 4}', 0],
    ['EVAL', 'return {true, false, 3.99, -3.99}', 0],
    ['EVAL', "return redis.call('PING')", 0],
    ['EVAL', "return redis.status_reply('FINE')", 0],
    ['EVAL', "return redis.error_reply('MYERR custom')", 0],
    ['EVAL', "local r = redis.pcall('INCR', KEYS[1]) return r", 1, '{p}z'],
    [
      'EVAL',
      "local r = redis.pcall('HGET', KEYS[1], 'f') return type(r) .. ':' .. tostring(r.err)",
      1,
      '{p}n',
    ],
    ['EVAL', "return redis.call('HGET', KEYS[1], 'f')", 1, '{p}n'],
    ['EVAL', "return redis.call('HGETALL', KEYS[1])", 1, '{p}none'],
    [
      'EVAL',
      "return {redis.call('HGET', KEYS[1], 'f') == false, type(redis.call('GET', KEYS[1]))}",
      1,
      '{p}none',
    ],
    ['EVAL', "local t = redis.call('ZRANGE', KEYS[1], 0, 0, 'WITHSCORES') return #t", 1, '{p}none'],
    ['EVAL', 'return {type(unpack), type(table.getn), type(loadstring), type(cjson), type(cjson.null)}', 0],
    ['EVAL', 'undefined_global = 1', 0],
    ['EVAL', 'return syntax error here', 0],
    ['EVAL', 'return 1', -1],
    ['EVAL', 'return 1', 2, 'a'],
    ['EVALSHA', 'ffffffffffffffffffffffffffffffffffffffff', 0],
  ],
  'EVAL: cjson as Redis ships it': [
    ['EVAL', "return cjson.encode({'a/b', 'x\"y', 'tab\\tnl\\n', string.char(127), string.char(1), 'é'})", 0],
    ['EVAL', 'return cjson.encode({})', 0],
    ['EVAL', 'return cjson.encode({1, 2, nil, 4})', 0],
    ['EVAL', 'local t = {} t[1] = 1 t[5] = 5 return cjson.encode(t)', 0],
    // Not `return cjson.encode(t)`: a Lua function tail-called leaves no frame to name the line
    // of, where Redis's C cjson does (scripting.lua, "Errors point at"): a known difference.
    ['EVAL', 'local t = {} t[1] = 1 t[20] = 5 local text = cjson.encode(t) return text', 0],
    ['EVAL', 'return cjson.encode({1e15, 0.1, 1/3, 5, -0.0, 123456789012345, 1700000000123})', 0],
    ['EVAL', 'return cjson.encode({true, false, cjson.null})', 0],
    ['EVAL', 'return cjson.encode({a = {b = {c = {}}}})', 0],
    ['EVAL', 'local text = cjson.encode(1/0) return text', 0],
    ['EVAL', "local value = cjson.decode('[1,') return value", 0],
    ['EVAL', "return cjson.encode({[2] = 'a'})", 0],
    [
      'EVAL',
      'local t = cjson.decode(ARGV[1]) return {t.a[1], t.a[2], type(t.a[3].b), tostring(t.c), t.d, t.e, tostring(t.f), tostring(t.g)}',
      0,
      '{"a":[1,2,{"b":null}],"c":1.5,"d":"x\\/y\\u00e9\\n","e":"\\ud83d\\ude00","f":true,"g":-12e-1}',
    ],
    ['EVAL', 'return cjson.encode(cjson.decode(ARGV[1]))', 0, '{"k":[1,"two",{"three":[]}]}'],
    ['EVAL', "return cjson.encode(cjson.decode('[]'))", 0],
  ],
  'MULTI/EXEC: replies in order, an error inside does not abort, a refused command does': [
    ['MULTI'],
    ['SET', '{p}m', '1'],
    ['INCR', '{p}m'],
    ['HGET', '{p}m', 'f'],
    ['EXEC'],
    ['MULTI'],
    ['SET', '{p}m', '1'],
    ['GET'],
    ['EXEC'],
    ['EXEC'],
    ['DISCARD'],
    ['MULTI'],
    ['PUBLISH', '{p}channel', 'nobody listens'],
    ['PUBLISH', '{p}channel'],
    ['EXEC'],
    ['MULTI'],
    ['PUBLISH', '{p}channel', 'nobody listens'],
    ['INCR', '{p}m'],
    ['EXEC'],
  ],
};

/** A reply or the error it failed with, as comparable data (Redis appends the script's sha to script errors). */
async function outcome(client: Redis, step: Step, prefix: string): Promise<unknown> {
  const [name, ...args] = step.map((part) =>
    typeof part === 'string' ? part.replaceAll('{p}', prefix) : part,
  );
  try {
    const reply = await client.call(String(name), ...args);
    return name === 'SMEMBERS' && Array.isArray(reply) ? [...reply].sort() : reply;
  } catch (error) {
    const message = error instanceof Error ? error.message : String(error);
    return { error: message.replace(/ script: [0-9a-f]{40}, on @user_script:\d+\.$/, '').trim() };
  }
}

describe('the embedded engine answers as Redis does', () => {
  let embedded: EmbeddedRedis;
  let real: Redis;
  let local: Redis;

  before(async () => {
    embedded = await EmbeddedRedis.start();
    real = new Redis(await testRedisUrl(), { maxRetriesPerRequest: 1 });
    local = new Redis(embedded.path, { maxRetriesPerRequest: 1 });
  });
  after(async () => {
    real.disconnect();
    local.disconnect();
    await embedded.close();
    await stopTestRedis();
  });

  for (const [name, steps] of Object.entries(CASES)) {
    test(name, async () => {
      const prefix = uniquePrefix('embedded');
      for (const step of steps) {
        const expected = await outcome(real, step, prefix);
        const actual = await outcome(local, step, prefix);
        assert.deepEqual(actual, expected, `${step.join(' ')}`);
      }
    });
  }
});

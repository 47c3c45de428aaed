import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { stopTestRedis, testRedisUrl, uniquePrefix } from '@herald/testkit';
import type { Redis } from 'ioredis';
import {
  createRedis,
  keyspace,
  loadScripts,
  parseRedisOptions,
  pipelineScript,
  runScript,
  scriptNamed,
} from '../src/index.js';

const scripts = loadScripts(fileURLToPath(new URL('./lua/', import.meta.url)));
let redis: Redis;

before(async () => {
  redis = createRedis(parseRedisOptions(await testRedisUrl()));
});
after(async () => {
  await redis.quit();
  await stopTestRedis();
});

const script = (name: string) => scriptNamed(scripts, name);

test('loads <name>-<keys>.lua files with their key counts and SHA1', () => {
  assert.deepEqual([...scripts.keys()].sort(), ['doubled', 'increment', 'pair']);
  assert.equal(script('increment').numberOfKeys, 1);
  assert.equal(script('pair').numberOfKeys, 2);
  assert.match(script('increment').sha, /^[0-9a-f]{40}$/);
});

test('a script missing from the set is named with the file it would come from', () => {
  assert.throws(
    () => scriptNamed(scripts, 'absent'),
    /^Error: Lua script absent is not loaded: no absent-<numberOfKeys>\.lua file$/,
  );
});

test('runs by SHA, falling back to EVAL on NOSCRIPT after SCRIPT FLUSH', async () => {
  const key = keyspace(uniquePrefix('scripts')).key('counter');
  await redis.script('FLUSH');
  assert.deepEqual(await redis.script('EXISTS', script('increment').sha), [0]);
  assert.equal(await runScript(redis, script('increment'), [key], [5]), 5);
  // EVAL loaded it: the next call is served by SHA.
  assert.deepEqual(await redis.script('EXISTS', script('increment').sha), [1]);
  assert.equal(await runScript(redis, script('increment'), [key], [2]), 7);
  await redis.del(key);
});

test('refuses a call with the wrong number of keys', async () => {
  await assert.rejects(runScript(redis, script('pair'), ['only-one'], ['a', 'b']), /takes 2 keys, got 1/);
});

test('queues scripts on a pipeline by SHA', async () => {
  const space = keyspace(uniquePrefix('pipeline'));
  await runScript(redis, script('pair'), [space.key('a'), space.key('b')], ['1', '2']);
  const results = await pipelineScript(
    redis.pipeline(),
    script('pair'),
    [space.key('a'), space.key('b')],
    ['3', '4'],
  ).exec();
  assert.deepEqual(results, [[null, ['3', '4']]]);
  await redis.del(space.key('a'), space.key('b'));
});

test('inlines --@include files from includes/', async () => {
  assert.doesNotMatch(script('doubled').source, /--@include/);
  assert.match(script('doubled').source, /local function double/);
  const key = keyspace(uniquePrefix('include')).key('doubled');
  assert.equal(await runScript(redis, script('doubled'), [key], [21]), 42);
  await redis.del(key);
});

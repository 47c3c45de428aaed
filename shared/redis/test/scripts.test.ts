import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { stopTestRedis, testRedisUrl, uniquePrefix } from '@herald/testkit';
import type { Redis } from 'ioredis';
import {
  CLOCK_KEY_SUFFIX,
  createRedis,
  keyspace,
  loadScripts,
  parseRedisOptions,
  pipelineScript,
  runScript,
  scriptNamed,
} from '../src/index.js';

const directory = fileURLToPath(new URL('./lua/', import.meta.url));
const scripts = loadScripts(directory);
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
  assert.deepEqual([...scripts.keys()].sort(), ['doubled', 'eightfold', 'increment', 'pair', 'stamped']);
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

test('inlines transitive includes depth first, each once: the dependencies of a helper before it', async () => {
  const source = script('eightfold').source;
  assert.doesNotMatch(source, /--@include/);
  const definitions = [...source.matchAll(/^local function (\w+)/gm)].map((match) => match[1]);
  // double (named first by the script) once; quadruple (octuple's first include) before octuple;
  // the script's own later include of quadruple and octuple's of double are dropped.
  assert.deepEqual(definitions, ['double', 'quadruple', 'octuple']);
  const key = keyspace(uniquePrefix('include')).key('eightfold');
  assert.equal(await runScript(redis, script('eightfold'), [key], [5]), 40);
  await redis.del(key);
});

test('an include cycle is refused, naming the chain', () => {
  assert.throws(
    () => loadScripts(fileURLToPath(new URL('./lua-cycle/', import.meta.url))),
    /^Error: looped-1\.lua: include cycle first -> second -> first$/,
  );
});

test('--@include clock reads Redis TIME and lets XADD stamp the entry (the default)', async () => {
  assert.match(script('stamped').source, /redis\.call\('TIME'\)/);
  const base = keyspace(uniquePrefix('clock')).key('');
  const before = Date.now();
  const [now, id] = await runScript<[string, string]>(redis, script('stamped'), [base], []);
  const after = Date.now();
  // Redis and this process share the machine's clock.
  assert.ok(Number(now) >= before - 1000 && Number(now) <= after + 1000, `${now} near ${before}`);
  assert.match(id, /^\d+-\d+$/);
  await redis.del(`${base}s`);
});

test('--@include clock loaded with clock: key reads the time a test stores at KEYS[1] + the suffix', async () => {
  const keyed = scriptNamed(loadScripts(directory, { clock: 'key' }), 'stamped');
  assert.doesNotMatch(keyed.source, /TIME/);
  assert.notEqual(keyed.sha, script('stamped').sha);
  const base = keyspace(uniquePrefix('clock')).key('');
  await assert.rejects(runScript(redis, keyed, [base], []), /no test clock at .*~test-clock/);
  await redis.set(`${base}${CLOCK_KEY_SUFFIX}`, '4102444800123');
  assert.deepEqual(await runScript(redis, keyed, [base], []), ['4102444800123', '4102444800123-0']);
  assert.deepEqual(await runScript(redis, keyed, [base], []), ['4102444800123', '4102444800123-1']);
  await redis.set(`${base}${CLOCK_KEY_SUFFIX}`, '4102444801000');
  assert.deepEqual(await runScript(redis, keyed, [base], []), ['4102444801000', '4102444801000-0']);
  await redis.del(`${base}s`, `${base}${CLOCK_KEY_SUFFIX}`);
});

/*
 * Bounded closing (issue #11, item 5): closing a connection or a client must finish whether Redis
 * answers, stalls or is gone, because a shutdown waits for it.
 */
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { after, test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { freePort, stopTestRedis, testRedisUrl, waitFor } from '@herald/testkit';
import {
  closeRedis,
  createRedis,
  DeadlineExceededError,
  parseRedisOptions,
  type Redis,
  replyWithin,
  settleWithin,
} from '../src/index.js';
import { StallProxy } from './stall-proxy.js';

/** A liveness bound for the close under test: failing it names the case instead of hanging. */
const BOUND_MS = 10_000;
const cleanups: (() => Promise<void> | void)[] = [];
after(async () => {
  for (const cleanup of cleanups.reverse()) await cleanup();
  await stopTestRedis();
});

function connect(url: string): Redis {
  const redis = createRedis(parseRedisOptions(url));
  redis.on('error', () => undefined);
  cleanups.push(() => redis.disconnect());
  return redis;
}

test('replyWithin answers the reply, or rejects with DeadlineExceededError naming the call', async () => {
  assert.equal(await replyWithin(Promise.resolve('PONG'), 1000, 'PING'), 'PONG');
  await assert.rejects(
    replyWithin(Promise.reject(new Error('own failure')), 1000, 'PING'),
    /^Error: own failure$/,
  );
  const never = new Promise<never>(() => undefined);
  await assert.rejects(replyWithin(never, 20, 'PING'), (error: unknown) => {
    assert.ok(error instanceof DeadlineExceededError);
    assert.equal(error.message, 'no PING reply within 20 ms');
    return true;
  });
});

test('settleWithin says whether the work settled, and never rejects', async () => {
  assert.equal(await settleWithin(Promise.resolve(1), 1000), true);
  assert.equal(await settleWithin(Promise.reject(new Error('failed')), 1000), true);
  assert.equal(await settleWithin(new Promise(() => undefined), 20), false);
});

test('closeRedis quits a live connection', async () => {
  const redis = connect(await testRedisUrl());
  await once(redis, 'ready');
  await replyWithin(closeRedis(redis), BOUND_MS, 'closeRedis');
  await waitFor(() => redis.status === 'end', { what: 'the connection to end' });
});

test('closeRedis ends a connection whose Redis stopped answering, QUIT unanswered', async () => {
  const upstream = new URL(await testRedisUrl());
  const proxy = await StallProxy.start(Number(upstream.port || 6379));
  cleanups.push(() => proxy.close());
  const redis = connect(proxy.url);
  await once(redis, 'ready');
  proxy.hold();
  await replyWithin(closeRedis(redis, 50), BOUND_MS, 'closeRedis');
  await waitFor(() => redis.status === 'end', { what: 'the connection to end' });
});

test('closeRedis stops a connection that is reconnecting to a Redis that is gone', async () => {
  // ioredis keeps status 'reconnecting' after a disconnect between attempts: what shows the
  // connection stopped is a process left with nothing to do, which exits on its own.
  const fixture = fileURLToPath(new URL('./fixtures/close-reconnecting.ts', import.meta.url));
  const child = spawn(process.execPath, ['--import', 'tsx', fixture, String(await freePort())], {
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  cleanups.push(() => {
    child.kill('SIGKILL');
  });
  let output = '';
  child.stdout.on('data', (chunk) => {
    output += chunk;
  });
  const [code] = await replyWithin(once(child, 'exit'), BOUND_MS, 'process exit');
  assert.equal(code, 0);
  assert.equal(output, 'closed\n');
});

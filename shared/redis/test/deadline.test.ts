/*
 * Fail-fast mode of data-plane connections (issue #9, defect 5): a command is refused while
 * Redis is unreachable or silent, and a refused command is never written afterwards, although
 * ioredis re-sends unanswered commands and flushes its offline queue on reconnect.
 */
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { once } from 'node:events';
import { after, test } from 'node:test';
import { freePort, RedisServer, waitFor } from '@herald/testkit';
import {
  createRedis,
  parseRedisOptions,
  type Redis,
  RedisUnavailableError,
  scriptCommand,
} from '../src/index.js';
import { StallProxy } from './stall-proxy.js';

const cleanups: (() => Promise<void> | void)[] = [];
after(async () => {
  for (const cleanup of cleanups.reverse()) await cleanup();
});

function connectTo(url: string, commandTimeout: number): Redis {
  const redis = createRedis(parseRedisOptions(url, { commandTimeout }));
  redis.on('error', () => undefined);
  cleanups.push(() => redis.disconnect());
  return redis;
}

async function refusal(promise: Promise<unknown>): Promise<RedisUnavailableError> {
  const error = await promise.then(
    () => assert.fail('the command was applied'),
    (error: unknown) => error,
  );
  assert.ok(error instanceof RedisUnavailableError, `expected RedisUnavailableError, got ${String(error)}`);
  return error;
}

/** A connection through a proxy that can hold its traffic, to a private server, ready. */
async function behindProxy(commandTimeout: number): Promise<{ redis: Redis; proxy: StallProxy }> {
  const server = await startServer();
  const proxy = await StallProxy.start(server.port);
  cleanups.push(() => proxy.close());
  const redis = connectTo(proxy.url, commandTimeout);
  await once(redis, 'ready');
  return { redis, proxy };
}

async function startServer(port?: number): Promise<RedisServer> {
  const server = await RedisServer.start({ appendOnly: true, ...(port ? { port } : {}) });
  cleanups.push(() => server.destroy());
  return server;
}

test('while the connection is lost a command is refused at once, and not applied once Redis is back', async () => {
  const server = await startServer();
  // A deadline far longer than the test: a refusal can only come from the lost connection.
  const redis = connectTo(server.url, 60_000);
  await once(redis, 'ready');
  await redis.set('before', '1');
  await server.kill();
  await waitFor(() => redis.status === 'reconnecting', { what: 'the drop to be seen' });

  const refused = await refusal(redis.set('during', 'refused'));
  assert.equal(refused.reason, 'disconnected');
  assert.match(refused.message, /unreachable/);

  await server.launch();
  await waitFor(() => redis.status === 'ready', { what: 'reconnect' });
  assert.equal(await redis.get('before'), '1', 'append-only data survived the kill');
  assert.equal(await redis.get('during'), null, 'the refused command was applied later');
});

for (const shape of ['alone', 'pipeline', 'multi'] as const) {
  test(`a command (${shape}) unanswered past its deadline is refused and not re-sent after a reconnect`, async () => {
    const { redis, proxy } = await behindProxy(300);

    proxy.hold();
    if (shape === 'alone') {
      assert.equal((await refusal(redis.set('k1', 'late'))).reason, 'timeout');
    } else {
      const batch = (shape === 'pipeline' ? redis.pipeline() : redis.multi()).set('k1', 'late').incr('k2');
      if (shape === 'pipeline') {
        const results = (await batch.exec()) ?? [];
        assert.equal(results.length, 2);
        for (const [error] of results) assert.ok(error instanceof RedisUnavailableError, String(error));
      } else {
        await assert.rejects(batch.exec());
      }
    }

    // The reconnect makes ioredis re-send every unanswered command: the refused ones must stay unsent.
    proxy.releaseAndCut();
    await waitFor(() => redis.status === 'ready', { what: 'reconnect' });
    assert.deepEqual(await redis.mget('k1', 'k2'), [null, null]);
    // Replies still match their commands (a half-dropped pipeline would shift them).
    assert.deepEqual(await redis.pipeline().set('k3', 'v').get('k3').exec(), [
      [null, 'OK'],
      [null, 'v'],
    ]);
  });
}

test('an unanswered command still within its deadline is re-sent after a reconnect and answered', async () => {
  const { redis, proxy } = await behindProxy(60_000);
  proxy.hold();
  const pending = redis.incr('counter');
  await waitFor(() => redis.commandQueue.length > 0, { what: 'the command to be written' });
  proxy.releaseAndCut();
  assert.equal(await pending, 1);
  assert.equal(await redis.get('counter'), '1');
});

test('a large command gets more time by its size: re-sent and answered where a small one is refused', async () => {
  const { redis, proxy } = await behindProxy(500);
  proxy.hold();
  // 64 MiB: 500 ms more per 8 MiB, so 4.5 s in all against the small command's 500 ms.
  const value = 'v'.repeat(64 * 1024 * 1024);
  const large = redis.set('large', value);
  let outcome: 'answered' | 'refused' | undefined;
  large.then(
    () => {
      outcome = 'answered';
    },
    () => {
      outcome = 'refused';
    },
  );
  const small = redis.set('small', 'refused');
  await refusal(small);
  // The sweep that refused the small command would have refused the large one (sent first) too.
  assert.equal(outcome, undefined, 'the large command was refused with the small one');
  proxy.releaseAndCut();
  assert.equal(await large, 'OK');
  assert.equal(await redis.strlen('large'), value.length);
  assert.equal(await redis.get('small'), null);
});

test("a large command's refusal names the time it had, its size allowance included", async () => {
  const { redis, proxy } = await behindProxy(200);
  proxy.hold();
  // 16 MiB of arguments (key and value): 200 ms more per 8 MiB, 600 ms in all.
  const refused = await refusal(redis.set('large', 'v'.repeat(16 * 1024 * 1024 - 'large'.length)));
  assert.equal(refused.reason, 'timeout');
  assert.match(refused.message, /within 600 ms$/);
  const small = await refusal(redis.set('small', 'refused'));
  assert.match(small.message, /within 200 ms$/);
  proxy.releaseAndCut();
});

test('a command expecting a large reply gets the same allowance for it', async () => {
  const { redis, proxy } = await behindProxy(200);
  proxy.hold();
  // A script on a queue that may hold a 16 MiB record, with its arguments (the text and the key
  // count '0'): 200 ms more per 8 MiB, 600 ms in all.
  const command = scriptCommand('eval', 'return 1', [], [], 16 * 1024 * 1024 - 'return 10'.length);
  const refused = await refusal(redis.sendCommand(command) as Promise<unknown>);
  assert.match(refused.message, /within 600 ms$/);
  const plain = await refusal(
    redis.sendCommand(scriptCommand('eval', 'return 1', [], [])) as Promise<unknown>,
  );
  assert.match(plain.message, /within 200 ms$/);
  proxy.releaseAndCut();
});

test('commands sent before the first connect succeeds are refused by their deadline, never applied later', async () => {
  const port = await freePort();
  const redis = connectTo(`redis://127.0.0.1:${port}`, 300);
  const refused = await refusal(redis.set('boot', 'refused'));
  assert.ok(['timeout', 'disconnected'].includes(refused.reason));
  await startServer(port);
  await waitFor(() => redis.status === 'ready', { what: 'first connect' });
  assert.equal(await redis.get('boot'), null);
});

test('a reply that arrived while the event loop was blocked past the deadline is taken, not refused', async () => {
  // A node starved of CPU (or in a long GC pause) runs its overdue timers before it reads the
  // replies that came in meanwhile: the sweep must not refuse a command Redis already answered.
  const server = await startServer();
  const redis = connectTo(server.url, 100);
  await once(redis, 'ready');
  const pending = redis.incr('counter');
  // Block the event loop until another client sees the increment (so Redis has executed it and
  // written its reply), then for three deadlines more.
  const readCounter = () =>
    execFileSync('redis-cli', ['-p', String(server.port), 'GET', 'counter'], { encoding: 'utf8' }).trim();
  while (readCounter() !== '1');
  Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, 300);
  assert.equal(await pending, 1);
});

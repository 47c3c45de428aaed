/*
 * A broker started while Redis is down (issue #9, defect 7): it listens at once, reports not
 * ready, says "waiting for Redis at host:port" once (no stack trace per reconnect attempt),
 * and becomes ready and serves push/pop as soon as Redis is there.
 */
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { test } from 'node:test';
import { freePort, RedisServer, waitFor } from '@herald/testkit';
import { call, MAIN } from './nodes.js';

/**
 * Refused connection attempts to wait for before Redis starts: four rounds of the six
 * connections a broker opens (storage, notify, BullMQ queue, worker and its blocking
 * connection, maintenance check), the reconnect backoff's first steps (100 to 800 ms).
 */
const REFUSED_ATTEMPTS = 24;

/**
 * Loaded into the broker (`--import`): appends the port of each of its TCP connection attempts
 * refused (ECONNREFUSED) to the file named by HERALD_REFUSED_FILE, as node:net reports them
 * (diagnostics channel `net.client.socket`: every connection ioredis opens).
 */
const REFUSED_RECORDER = `data:text/javascript;base64,${Buffer.from(`
import { subscribe } from 'node:diagnostics_channel';
import { appendFileSync } from 'node:fs';
const file = process.env.HERALD_REFUSED_FILE;
if (file) subscribe('net.client.socket', ({ socket }) => socket.once('error', (error) => {
  if (error.code === 'ECONNREFUSED') appendFileSync(file, error.port + '\\n');
}));
`).toString('base64')}`;

test('a broker booted without Redis listens, is not ready, then ready once Redis starts', {
  timeout: 60_000,
}, async () => {
  const redisPort = await freePort();
  const port = await freePort();
  const url = `http://127.0.0.1:${port}`;
  const directory = mkdtempSync(join(tmpdir(), 'herald-boot-'));
  const refusedFile = join(directory, 'refused');
  const refused = () =>
    existsSync(refusedFile)
      ? readFileSync(refusedFile, 'utf8')
          .split('\n')
          .filter((line) => line === String(redisPort)).length
      : 0;
  const child = spawn(process.execPath, ['--import', REFUSED_RECORDER, MAIN], {
    env: {
      PATH: process.env.PATH ?? '',
      PORT: String(port),
      HOST: '127.0.0.1',
      LOG_LEVEL: 'info',
      REDIS_URL: `redis://127.0.0.1:${redisPort}`,
      SHUTDOWN_TIMEOUT: '3000',
      HERALD_REFUSED_FILE: refusedFile,
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const lines: string[] = [];
  for (const stream of [child.stdout, child.stderr])
    createInterface({ input: stream }).on('line', (line) => lines.push(line));
  let redis: RedisServer | undefined;
  try {
    // Without Redis: the old broker had no listener for as long as Redis was away (40 s and more,
    // issue #9). Not a speed bound: a loaded 2-core machine takes 5-8 s just to start the process,
    // and Redis is only started below, after the listener answered.
    await waitFor(async () => (await fetch(`${url}/healthz`)).status === 200, {
      what: 'the broker to listen while Redis is down',
      timeoutMs: 30_000,
    });
    const notReady = await call(url, 'GET', '/readyz');
    assert.equal(notReady.status, 503);
    const waiting = new RegExp(`waiting for Redis at 127\\.0\\.0\\.1:${redisPort}`);
    await waitFor(() => lines.some((line) => waiting.test(line)), { what: 'the "waiting for Redis" line' });
    // Several reconnect attempts of every connection (storage, notify, BullMQ queue and worker).
    await waitFor(() => refused() >= REFUSED_ATTEMPTS, {
      what: `${REFUSED_ATTEMPTS} refused connection attempts to Redis`,
      timeoutMs: 30_000,
    });
    assert.equal((await call(url, 'GET', '/readyz')).status, 503);

    redis = await RedisServer.start({ port: redisPort });
    await waitFor(async () => (await call(url, 'GET', '/readyz')).status === 200, {
      what: 'readiness once Redis is up',
      timeoutMs: 20_000,
    });
    const pushed = await call(url, 'POST', '/api/v1/push', {
      items: [{ queue: 'boot.q', partition: 'p', payload: { n: 1 } }],
    });
    assert.equal(pushed.status, 201);
    const popped = await call(url, 'GET', '/api/v1/pop/queue/boot.q?consumerGroup=g&autoAck=true');
    assert.equal(popped.status, 200);
    assert.deepEqual(popped.body.messages[0].data, { n: 1 });

    await waitFor(
      () => lines.some((line) => line.includes(`Redis at 127.0.0.1:${redisPort} is back after`)),
      {
        what: 'the "Redis is back" line',
      },
    );
    // One clear line, no flood: the waiting line once, and no warning repeated per reconnect
    // attempt (the old broker wrote a stack trace for each attempt of each connection).
    const warnings = lines
      .map((line) => JSON.parse(line) as { level: number; msg: string })
      .filter((entry) => entry.level >= 40)
      .map((entry) => entry.msg);
    assert.equal(warnings.filter((msg) => waiting.test(msg)).length, 1, warnings.join('\n'));
    assert.equal(new Set(warnings).size, warnings.length, warnings.join('\n'));
    assert.ok(lines.filter((line) => line.includes('"stack"')).length <= 1, lines.join('\n'));
  } finally {
    child.kill('SIGTERM');
    if (child.exitCode === null) await once(child, 'exit');
    await redis?.destroy();
    rmSync(directory, { recursive: true, force: true });
  }
});

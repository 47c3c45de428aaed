/*
 * A hub started while Redis is down (issue #9, defect 7): it binds before it gives up reading
 * the history tail (the old hub held its port for that 2 s timeout plus a 3 s wait for the
 * pub/sub probe), reports not ready, and becomes ready once Redis starts. No stack traces.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { freePort, RedisServer, waitFor } from '@herald/testkit';
import { spawnHub } from './support.js';

test('a hub booted without Redis listens first, then becomes ready when Redis starts', {
  timeout: 60_000,
}, async () => {
  const redisPort = await freePort();
  const node = await spawnHub(
    { REDIS_URL: `redis://127.0.0.1:${redisPort}`, MERCURE_ANONYMOUS: '1', LOG_LEVEL: 'info' },
    { waitReady: false },
  );
  let redis: RedisServer | undefined;
  try {
    await waitFor(() => node.output().includes('could not read the history tail'), {
      what: 'the history-tail warning',
    });
    const output = node.output();
    const listening = output.indexOf('"hub listening"');
    assert.ok(listening >= 0, output);
    assert.ok(
      listening < output.indexOf('could not read the history tail'),
      'bound before the tail read gave up',
    );
    assert.equal((await fetch(`${node.origin}/readyz`)).status, 503);

    redis = await RedisServer.start({ port: redisPort });
    await waitFor(() => node.isReady(), { what: 'readiness once Redis is up', timeoutMs: 20_000 });
    // No flood: no line repeated per reconnect attempt.
    const warnings = node
      .output()
      .split('\n')
      .filter((line) => line.startsWith('{'))
      .map((line) => JSON.parse(line) as { level: number; msg: string })
      .filter((entry) => entry.level >= 40)
      .map((entry) => entry.msg);
    assert.equal(new Set(warnings).size, warnings.length, warnings.join('\n'));
  } finally {
    await node.stop();
    await redis?.destroy();
  }
});

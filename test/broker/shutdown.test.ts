/*
 * Shutdown with Redis gone: ioredis QUIT and BullMQ close() wait for a reconnect that never
 * comes; the broker bounds its own close, so SIGTERM still exits 0 well before
 * SHUTDOWN_TIMEOUT (set far above the test timeout here, so the kit's cut cannot help).
 */
import assert from 'node:assert/strict';
import { once } from 'node:events';
import { after, test } from 'node:test';
import { RedisServer, waitFor } from '@herald/testkit';
import { BrokerNode } from './nodes.js';

let redis: RedisServer | undefined;
let node: BrokerNode | undefined;

after(async () => {
  await node?.stop();
  await redis?.destroy();
});

test('SIGTERM exits 0 promptly while Redis is down', { timeout: 30_000 }, async () => {
  redis = await RedisServer.start();
  node = await BrokerNode.start({ REDIS_URL: redis.url, SHUTDOWN_TIMEOUT: '300s', LOG_LEVEL: 'silent' });
  const { child, url } = node;
  await redis.kill();
  // The node has noticed the outage (its readiness probe fails) before it is told to stop.
  await waitFor(async () => (await fetch(`${url}/readyz`)).status === 503, { what: 'readyz 503' });
  const exited = once(child, 'exit') as Promise<[number | null, NodeJS.Signals | null]>;
  child.kill('SIGTERM');
  const [code, signal] = await exited;
  assert.equal(signal, null);
  assert.equal(code, 0);
});

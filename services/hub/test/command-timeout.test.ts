/*
 * REDIS_COMMAND_TIMEOUT (issue #24 item 4) on the hub: a subscription's history read that Redis
 * holds (CLIENT PAUSE ALL on a private server) is refused with 503 once the configured deadline
 * passes, not the default's (2 s). Only a lower bound on time.
 */
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { RedisServer } from '@herald/testkit';
import { Redis } from 'ioredis';
import { publishOk, startTestHub, subscribeUrl, type TestHub } from './helpers.js';

const DEADLINE_MS = 3500;

let server: RedisServer;
let admin: Redis;
let hub: TestHub;
before(async () => {
  server = await RedisServer.start();
  admin = new Redis(server.url);
  hub = await startTestHub('redis', {
    REDIS_URL: server.url,
    REDIS_COMMAND_TIMEOUT: String(DEADLINE_MS),
    MERCURE_ANONYMOUS: '1',
    MERCURE_HEARTBEAT: '0',
  });
});
after(async () => {
  await hub?.close();
  admin?.disconnect();
  await server?.stop();
});

test('a replay Redis holds answers 503 at the configured deadline; it works once the pause is over', async () => {
  const topic = 'https://example.com/deadline';
  await publishOk(hub.url, { topic, data: 'kept' });
  const url = subscribeUrl(hub.url, [['match', topic]]);
  // Longer than the deadline; it ends on its own (CLIENT UNPAUSE would wait behind PAUSE ALL too).
  await admin.client('PAUSE', DEADLINE_MS + 1500, 'ALL');
  const started = performance.now();
  const held = await fetch(url, { headers: { 'last-event-id': 'earliest' } });
  const waited = performance.now() - started;
  await held.body?.cancel();
  assert.equal(held.status, 503);
  assert.ok(
    waited >= DEADLINE_MS - 5,
    `refused after ${Math.round(waited)} ms, before the ${DEADLINE_MS} ms deadline`,
  );
  const controller = new AbortController();
  const replay = await fetch(url, { headers: { 'last-event-id': 'earliest' }, signal: controller.signal });
  assert.equal(replay.status, 200);
  controller.abort();
});

/*
 * REDIS_COMMAND_TIMEOUT (issue #24 item 4): a request whose Redis command goes unanswered is
 * refused with 503 once the configured deadline passes, not the default's. Redis holds the
 * command itself (CLIENT PAUSE WRITE on a private server), so nothing but the deadline ends the
 * wait. Only a lower bound on time: the 503 comes no earlier than the configured deadline, which
 * with the default (1 s) it would.
 */
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { RedisServer } from '@herald/testkit';
import { Redis } from 'ioredis';
import type { Broker } from '../src/index.js';
import { client, queueName, startTestBroker } from './helpers.js';

const DEADLINE_MS = 2500;

let server: RedisServer;
let admin: Redis;
let broker: Broker;
before(async () => {
  server = await RedisServer.start();
  admin = new Redis(server.url);
  broker = await startTestBroker('redis', {
    REDIS_URL: server.url,
    REDIS_COMMAND_TIMEOUT: String(DEADLINE_MS),
  });
});
after(async () => {
  await admin?.client('UNPAUSE').catch(() => undefined);
  await broker?.close();
  admin?.disconnect();
  await server?.stop();
});

test('a push held by Redis answers 503 at the configured deadline, and works again once Redis answers', async () => {
  const api = client(broker.url);
  const queue = queueName('deadline');
  assert.equal((await api.configure(queue, {})).status, 200);
  await admin.client('PAUSE', 60_000, 'WRITE');
  const started = performance.now();
  const held = await api.push([{ queue, payload: 1 }]);
  const waited = performance.now() - started;
  await admin.client('UNPAUSE');
  assert.equal(held.status, 503);
  assert.ok(
    waited >= DEADLINE_MS - 5,
    `refused after ${Math.round(waited)} ms, before the ${DEADLINE_MS} ms deadline`,
  );
  assert.equal((await api.push([{ queue, payload: 2 }])).status, 201);
});

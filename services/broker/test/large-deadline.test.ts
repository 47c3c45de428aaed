/*
 * The command deadline of a queue holding large messages. A pop of one 240 MiB message took
 * Redis ~1.5 s, past the 1 s default deadline: it answered 503 with the lease taken, every time,
 * so a message the broker had accepted (201) could never be delivered. Now a node notes each
 * record of 1 MiB or more before writing it (redis/record-sizes.ts) and every node gives the
 * scripts on that queue `timeoutMs` more per 8 MiB of its largest record, as a push gets for its
 * arguments. Redis holds the pops here (CLIENT PAUSE WRITE on a private server), so only the
 * deadline ends the wait: the assertions are lower bounds on time, which the old code, refusing
 * at the plain deadline, fails.
 */
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { RedisServer, uniquePrefix } from '@herald/testkit';
import { Redis } from 'ioredis';
import type { Broker } from '../src/index.js';
import { client, queueName, startTestBroker } from './helpers.js';

const DEADLINE_MS = 200;
const MIB = 1024 * 1024;
/** 16 MiB of payload: its record's allowance is 200 ms per 8 MiB, 400 ms (and a little more). */
const LARGE = 16 * MIB;
const ALLOWED_MS = DEADLINE_MS + (DEADLINE_MS * LARGE) / (8 * MIB);

const prefix = uniquePrefix('sizes');
let server: RedisServer;
let admin: Redis;
const brokers: Broker[] = [];
before(async () => {
  server = await RedisServer.start();
  admin = new Redis(server.url);
});
after(async () => {
  await admin?.client('UNPAUSE').catch(() => undefined);
  for (const broker of brokers) await broker.close();
  admin?.disconnect();
  await server?.stop();
});

async function node(): Promise<Broker> {
  const broker = await startTestBroker('redis', {
    REDIS_URL: server.url,
    REDIS_COMMAND_TIMEOUT: String(DEADLINE_MS),
    BROKER_KEY_PREFIX: prefix,
  });
  brokers.push(broker);
  return broker;
}

/** A pop held by Redis: its status and how long it waited (ms). */
async function heldPop(broker: Broker, queue: string): Promise<{ status: number; waited: number }> {
  const started = performance.now();
  const reply = await client(broker.url).pop(queue, 'wait=false');
  return { status: reply.status, waited: performance.now() - started };
}

test("a queue's large message gives its scripts on every node the time to read it", async () => {
  const [a, b] = [await node(), await node()];
  const queue = queueName('sizes');
  const api = client(a.url);
  assert.equal((await api.configure(queue, {})).status, 200);
  // Node b reads the (empty) marks now, so it learns of the large record from the control channel.
  assert.equal((await client(b.url).pop(queue, 'wait=false')).status, 204);

  const pushed = await api.push([{ queue, payload: 'x'.repeat(LARGE) }]);
  assert.equal(pushed.status, 201);
  // Started after the push, so the control message never reached it: it read the marks from
  // Redis as it started. Its first request reads the system flags, a plain read that a held
  // Redis would refuse at the plain deadline: made before Redis holds anything.
  const c = await node();
  assert.equal((await client(c.url).pop(queueName('other'), 'wait=false')).status, 204);

  await admin.client('PAUSE', 60_000, 'WRITE');
  const pops = await Promise.all([a, b, c].map((broker) => heldPop(broker, queue)));
  await admin.client('UNPAUSE');
  pops.forEach(({ status, waited }, index) => {
    assert.equal(status, 503, `node ${index}`);
    assert.ok(
      waited >= ALLOWED_MS - 5,
      `node ${index} refused the pop after ${Math.round(waited)} ms, before the ${ALLOWED_MS} ms it allows`,
    );
  });

  // The mark in Redis: the record's size, under the queue's slot tag (its name as keys spell it).
  const tag = encodeURIComponent(queue);
  const mark = Number(await admin.zscore(`${prefix}sizes`, tag));
  assert.ok(mark > LARGE && mark < LARGE + 1024, `mark ${mark}`);
  // A deleted queue's mark goes: a queue of that name made again starts without it.
  assert.equal((await api.call('DELETE', `/api/v1/resources/queues/${tag}`)).status, 200);
  assert.equal(await admin.zscore(`${prefix}sizes`, tag), null);
});

import assert from 'node:assert/strict';
import { once } from 'node:events';
import { connect, type Socket } from 'node:net';
import { after, describe, test } from 'node:test';
import { KeyClock } from '@herald/redis';
import { waitFor } from '@herald/testkit';
import type { Subscriber } from '../src/subscriber.js';
import {
  cleanupRedis,
  publisherToken,
  publishOk,
  SseStream,
  startTestHub,
  subscribeUrl,
  type TestHub,
} from './helpers.js';

after(cleanupRedis);

/**
 * The subscriber's write is blocked now: its dispatch timer runs from the clock's present time
 * (writes come only from publishes, and the clock moves only here). 1 ms before the timeout it
 * is open; at the timeout it is closed, unless the socket drained in between (the kernel took
 * the bytes): then it is no longer blocked, and the caller publishes on.
 */
async function passDispatchTimeout(clock: KeyClock, subscriber: Subscriber): Promise<void> {
  const blockedAt = clock.now();
  await clock.set(blockedAt + DISPATCH_TIMEOUT - 1);
  assert.equal(subscriber.closed, false, 'open 1 ms before the dispatch timeout');
  await clock.set(blockedAt + DISPATCH_TIMEOUT);
  assert.equal(
    subscriber.closed || !subscriber.writeBlocked,
    true,
    'a write still blocked at the timeout closes',
  );
}

/** A raw client that sends the request, reads the response head, then never reads again. */
async function stalledSubscriber(hub: TestHub, topic: string): Promise<Socket> {
  const { port } = new URL(hub.origin);
  const socket = connect(Number(port), '127.0.0.1');
  await once(socket, 'connect');
  socket.write(
    `GET /.well-known/mercure?match=${encodeURIComponent(topic)} HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Forwarded-Proto: https\r\n\r\n`,
  );
  const [head] = (await once(socket, 'data')) as [Buffer];
  assert.match(head.toString(), /^HTTP\/1.1 200/);
  socket.pause();
  socket.on('error', () => undefined);
  return socket;
}

/** The dispatch timeout of the case that moves the hub's clock past it (ms). */
const DISPATCH_TIMEOUT = 300;

for (const { name, environment, reason } of [
  {
    name: 'a queue over its byte cap',
    environment: { MERCURE_MAX_CONNECTION_QUEUE_BYTES: String(256 * 1024), MERCURE_DISPATCH_TIMEOUT: '60s' },
    reason: 'queue_full',
  },
  {
    name: 'a queue over its event cap',
    environment: {
      MERCURE_MAX_CONNECTION_QUEUE_BYTES: String(1024 * 1024 * 1024),
      MERCURE_MAX_CONNECTION_QUEUE_EVENTS: '8',
      MERCURE_DISPATCH_TIMEOUT: '60s',
    },
    reason: 'queue_full',
  },
  {
    name: 'a write blocked past the dispatch timeout',
    environment: {
      MERCURE_MAX_CONNECTION_QUEUE_BYTES: String(1024 * 1024 * 1024),
      MERCURE_DISPATCH_TIMEOUT: `${DISPATCH_TIMEOUT}ms`,
    },
    reason: 'dispatch_timeout',
  },
]) {
  describe(`slow subscriber: ${name}`, () => {
    for (const backend of ['memory', 'redis'] as const) {
      test(`the stalled client is disconnected; the other receives every update (${backend})`, async () => {
        // The hub's time moves only when the test moves it: the dispatch timer of a blocked write
        // fires when the test moves the clock past it, never while publishes are under way.
        const clock = new KeyClock(Date.now());
        const hub = await startTestHub(
          backend,
          { MERCURE_ANONYMOUS: '1', MERCURE_HEARTBEAT: '0', ...environment },
          { clock },
        );
        try {
          const topic = 'https://example.com/firehose';
          const healthy = await SseStream.open(subscribeUrl(hub.url, [['match', topic]]));
          const before = new Set(hub.server.hub.index.all());
          const stalled = await stalledSubscriber(hub, topic);
          const [stalledOnHub] = [...hub.server.hub.index.all()].filter((each) => !before.has(each));
          assert.ok(stalledOnHub, "the stalled client's subscriber");
          let closedReason: string | undefined;
          const disconnected = new Promise<void>((resolve) =>
            hub.server.hub.events.on('subscriber-closed', (event: { reason: string }) => {
              closedReason = event.reason;
              resolve();
            }),
          );
          const data = 'x'.repeat(32 * 1024);
          const token = publisherToken();
          const ids: string[] = [];
          let done = false;
          void disconnected.then(() => {
            done = true;
          });
          // Publish until the hub gives up on the stalled client (bounded: ~400 MB at most).
          for (let index = 0; !done && index < 12_000; index++) {
            ids.push(await publishOk(hub.url, { topic, data }, token));
            if (reason === 'dispatch_timeout' && stalledOnHub.writeBlocked) {
              await passDispatchTimeout(clock, stalledOnHub);
              if (stalledOnHub.closed) await disconnected;
            }
          }
          assert.ok(done, 'the stalled subscriber was disconnected');
          assert.equal(closedReason, reason);
          for (let index = 0; index < 5; index++) ids.push(await publishOk(hub.url, { topic, data }, token));
          await healthy.waitForEvents(ids.length);
          assert.deepEqual(
            healthy.events.map((event) => event.id),
            ids,
          );
          const metrics = await (await fetch(`${hub.origin}/metrics`)).text();
          assert.match(
            metrics,
            new RegExp(`mercure_slow_subscriber_disconnects_total\\{reason="${reason}"\\} 1`),
          );
          healthy.close();
          stalled.destroy();
        } finally {
          await hub.close();
        }
      });
    }
  });
}

test('a client that stops reading, then reads again, gets every event once, in order', async () => {
  // The clock never moves: the dispatch timer of the blocked writes never fires.
  const clock = new KeyClock(Date.now());
  const hub = await startTestHub(
    'memory',
    {
      MERCURE_ANONYMOUS: '1',
      MERCURE_HEARTBEAT: '0',
      MERCURE_MAX_CONNECTION_QUEUE_BYTES: String(64 * 1024 * 1024),
    },
    { clock },
  );
  try {
    const topic = 'https://example.com/resumes-reading';
    const socket = await stalledSubscriber(hub, topic);
    const [subscriber] = [...hub.server.hub.index.all()];
    assert.ok(subscriber);
    const data = 'x'.repeat(32 * 1024);
    const token = publisherToken();
    const ids: string[] = [];
    while (!subscriber.writeBlocked) ids.push(await publishOk(hub.url, { topic, data }, token));
    // Held by the hub now, more than a socket takes at once: each flush after a drain blocks again.
    for (let index = 0; index < 40; index++) ids.push(await publishOk(hub.url, { topic, data }, token));

    const received: string[] = [];
    let carry = '';
    socket.setEncoding('latin1');
    let ended = false;
    socket.on('data', (chunk: string) => {
      const lines = (carry + chunk).split('\n');
      carry = lines.pop() ?? '';
      for (const line of lines) {
        if (line.startsWith('id: ')) received.push(line.slice(4));
        if (line === 'data: end') ended = true;
      }
    });
    socket.resume();
    // The last event: whatever was lost or repeated before it shows in the comparison.
    ids.push(await publishOk(hub.url, { topic, data: 'end' }, token));
    // Lost events never let 'end' come: the comparison after the wait shows which.
    await waitFor(() => ended, { timeoutMs: 30_000, what: "the last event, 'end'" }).catch(() => undefined);
    assert.deepEqual(received, ids);
    assert.equal(subscriber.closed, false);
    assert.equal(subscriber.writeBlocked, false);
    socket.destroy();
  } finally {
    await hub.close();
  }
});

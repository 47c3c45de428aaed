import assert from 'node:assert/strict';
import { once } from 'node:events';
import { connect, type Socket } from 'node:net';
import { after, describe, test } from 'node:test';
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

for (const { name, environment, reason } of [
  {
    name: 'a queue over its byte cap',
    environment: { MERCURE_MAX_CONNECTION_QUEUE_BYTES: String(256 * 1024), MERCURE_DISPATCH_TIMEOUT: '60s' },
    reason: 'queue_full',
  },
  {
    name: 'a write blocked past the dispatch timeout',
    environment: {
      MERCURE_MAX_CONNECTION_QUEUE_BYTES: String(1024 * 1024 * 1024),
      MERCURE_DISPATCH_TIMEOUT: '300ms',
    },
    reason: 'dispatch_timeout',
  },
]) {
  describe(`slow subscriber: ${name}`, () => {
    for (const backend of ['memory', 'redis'] as const) {
      test(`the stalled client is disconnected; the other receives every update (${backend})`, async () => {
        const hub = await startTestHub(backend, {
          MERCURE_ANONYMOUS: '1',
          MERCURE_HEARTBEAT: '0',
          ...environment,
        });
        try {
          const topic = 'https://example.com/firehose';
          const healthy = await SseStream.open(subscribeUrl(hub.url, [['match', topic]]));
          const stalled = await stalledSubscriber(hub, topic);
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

import assert from 'node:assert/strict';
import { once } from 'node:events';
import { type ClientHttp2Session, connect, constants } from 'node:http2';
import { after, describe, test } from 'node:test';
import { parseHubConfig } from '../src/config.js';
import {
  BACKENDS,
  cleanupRedis,
  publisherToken,
  publishOk,
  SECURE,
  SseStream,
  startTestHub,
  subscriberToken,
  type TestHub,
} from './helpers.js';

after(cleanupRedis);

function path(parameters: [string, string][]): string {
  return `/.well-known/mercure?${new URLSearchParams(parameters)}`;
}

async function connectH2c(hub: TestHub): Promise<ClientHttp2Session> {
  assert.ok(hub.h2cOrigin, 'the hub listens for h2c');
  const session = connect(hub.h2cOrigin);
  session.on('error', () => undefined);
  await once(session, 'remoteSettings');
  return session;
}

/** POST over the HTTP/2 connection: status and body. */
async function publishOn(
  session: ClientHttp2Session,
  fields: Record<string, string>,
  token: string,
): Promise<{ status: number; body: string }> {
  const request = session.request({
    ':method': 'POST',
    ':path': '/.well-known/mercure',
    'content-type': 'application/x-www-form-urlencoded',
    authorization: `Bearer ${token}`,
    ...SECURE,
  });
  request.end(new URLSearchParams(fields).toString());
  const [headers] = (await once(request, 'response')) as [Record<string, string | number>];
  request.setEncoding('utf8');
  let body = '';
  for await (const chunk of request) body += chunk;
  return { status: Number(headers[':status']), body };
}

describe('the h2c listener (MERCURE_H2C_PORT)', () => {
  for (const backend of BACKENDS) {
    test(`subscribers sharing one HTTP/2 connection each get what their token allows (${backend})`, async () => {
      const hub = await startTestHub(backend, { MERCURE_H2C_PORT: '0', MERCURE_ANONYMOUS: '1' });
      const session = await connectH2c(hub);
      try {
        const open = 'https://example.com/books/1';
        const secret = 'https://example.com/users/7';
        const anonymous = await SseStream.openOn(session, path([['match', open]]));
        const allowed = await SseStream.openOn(session, path([['match', secret]]), {
          authorization: `Bearer ${subscriberToken([{ match: secret }])}`,
        });
        const denied = await SseStream.openOn(session, path([['match', secret]]), {
          authorization: `Bearer ${subscriberToken([{ match: open }])}`,
        });
        assert.equal(anonymous.status, 200);
        assert.equal(anonymous.headers['content-type'], 'text/event-stream');
        assert.equal(anonymous.headers.connection, undefined, 'no connection-specific header on HTTP/2');
        assert.equal([...hub.server.hub.index.all()].length, 3);

        // A private update published over HTTP/1.1, a public one over the same HTTP/2 connection.
        const privateId = await publishOk(hub.url, { topic: secret, data: 'mine', private: 'on' });
        const published = await publishOn(session, { topic: open, data: 'for all' }, publisherToken());
        assert.equal(published.status, 200, published.body);
        const [mine] = await allowed.waitForEvents(1);
        assert.deepEqual(mine, { id: privateId, data: 'mine' });
        const [public_] = await anonymous.waitForEvents(1);
        assert.deepEqual(public_, { id: published.body, data: 'for all' });
        // The denied stream matches the topic but not the private update: a public one on its
        // topic is what it receives first.
        const publicSecret = await publishOk(hub.url, { topic: secret, data: 'public now' });
        const [first] = await denied.waitForEvents(1);
        assert.deepEqual(first, { id: publicSecret, data: 'public now' });
        const [, second] = await allowed.waitForEvents(2);
        assert.equal(second?.id, publicSecret);

        // The HTTP/1.1 port is untouched.
        const http1 = await SseStream.open(`${hub.url}?${new URLSearchParams([['match', open]])}`);
        assert.equal(http1.headers.connection, 'keep-alive');
        http1.close();
        for (const stream of [anonymous, allowed, denied]) stream.close();
      } finally {
        session.destroy();
        await hub.close();
      }
    });
  }

  test("a stream's head over HTTP/2 carries what the HTTP/1.1 one does, less the connection's headers", async () => {
    // HTTP/2 heads go to the stream itself (subscribe.ts, sendHead), not through node's writeHead.
    const hub = await startTestHub('memory', {
      MERCURE_H2C_PORT: '0',
      MERCURE_ANONYMOUS: '1',
      MERCURE_CORS_ORIGINS: 'https://app.example',
    });
    const session = await connectH2c(hub);
    try {
      const topic = 'https://example.com/heads/1';
      const id = await publishOk(hub.url, { topic, data: 'earlier' });
      const query = [
        ['match', topic],
        ['lastEventID', id],
      ] satisfies [string, string][];
      const origin = { origin: 'https://app.example' };
      const http1 = await SseStream.open(`${hub.url}?${new URLSearchParams(query)}`, origin);
      const http2 = await SseStream.openOn(session, path(query), origin);
      const comparable = (headers: Record<string, unknown>) =>
        Object.fromEntries(
          Object.entries(headers).filter(
            ([name]) =>
              !['connection', 'keep-alive', 'transfer-encoding', 'date', 'x-request-id'].includes(name),
          ),
        );
      assert.equal(http2.status, 200);
      assert.deepEqual(comparable({ ...http2.headers, ':status': undefined }), {
        ...comparable(http1.headers),
        ':status': undefined,
      });
      assert.equal(http2.headers['access-control-allow-origin'], 'https://app.example');
      assert.equal(http2.headers['last-event-id'], id);
      assert.match(String(http2.headers.date), /GMT$/);
      assert.match(String(http2.headers['x-request-id']), /^[\w-]+$/);
      assert.notEqual(http2.headers['x-request-id'], http1.headers['x-request-id']);
      // Resumed after the one update there is: the next is the first either gets.
      const later = await publishOk(hub.url, { topic, data: 'later' });
      for (const stream of [http1, http2])
        assert.deepEqual(await stream.waitForEvents(1), [{ id: later, data: 'later' }]);
      http1.close();
      http2.close();
    } finally {
      session.destroy();
      await hub.close();
    }
  });

  test('MERCURE_H2C_PORT equal to PORT is refused at start', () => {
    const base = { MERCURE_PUBLISHER_JWT_KEY: 'k'.repeat(32), MERCURE_SUBSCRIBER_JWT_KEY: 'k'.repeat(32) };
    assert.throws(
      () => parseHubConfig({ ...base, PORT: '8080', MERCURE_H2C_PORT: '8080' }),
      /^ConfigError: MERCURE_H2C_PORT: must differ from PORT/,
    );
    assert.equal(parseHubConfig({ ...base, PORT: '8080', MERCURE_H2C_PORT: '8081' }).MERCURE_H2C_PORT, 8081);
    assert.equal(parseHubConfig({ ...base, PORT: '0', MERCURE_H2C_PORT: '0' }).MERCURE_H2C_PORT, 0);
  });

  test('the connection announces MERCURE_H2C_MAX_STREAMS', async () => {
    const hub = await startTestHub('memory', { MERCURE_H2C_PORT: '0', MERCURE_H2C_MAX_STREAMS: '7' });
    const session = await connectH2c(hub);
    try {
      assert.equal(session.remoteSettings.maxConcurrentStreams, 7);
    } finally {
      session.destroy();
      await hub.close();
    }
  });

  test('a stalled stream is closed; the other streams of its connection get every update', async () => {
    const hub = await startTestHub('memory', {
      MERCURE_H2C_PORT: '0',
      MERCURE_ANONYMOUS: '1',
      MERCURE_HEARTBEAT: '0',
      MERCURE_MAX_CONNECTION_QUEUE_BYTES: String(256 * 1024),
      MERCURE_DISPATCH_TIMEOUT: '60s',
    });
    const session = await connectH2c(hub);
    try {
      const topic = 'https://example.com/firehose';
      const healthy = await SseStream.openOn(session, path([['match', topic]]));
      const stalled = session.request({ ':path': path([['match', topic]]), ...SECURE });
      stalled.on('error', () => undefined);
      await once(stalled, 'response');
      stalled.pause();
      const stalledClosed = once(stalled, 'close');
      let closedReason: string | undefined;
      const disconnected = new Promise<void>((resolve) =>
        hub.server.hub.events.on('subscriber-closed', (event: { reason: string }) => {
          closedReason = event.reason;
          resolve();
        }),
      );
      let done = false;
      void disconnected.then(() => {
        done = true;
      });
      const data = 'x'.repeat(32 * 1024);
      const ids: string[] = [];
      // Bounded: the stalled stream's window (64 KiB) and the hub's queue cap (256 KiB) fill long before.
      for (let index = 0; !done && index < 1000; index++) {
        ids.push(await publishOk(hub.url, { topic, data }));
        // The healthy stream keeps reading: the connection's window is given back as it does.
        await healthy.waitForEvents(ids.length);
      }
      assert.ok(done, 'the stalled stream was closed');
      assert.equal(closedReason, 'queue_full');
      // Reset (CANCEL), not ended: RST_STREAM NO_ERROR after a partial response can pass for a whole one.
      await stalledClosed;
      assert.equal(stalled.rstCode, constants.NGHTTP2_CANCEL);
      for (let index = 0; index < 5; index++) ids.push(await publishOk(hub.url, { topic, data }));
      await healthy.waitForEvents(ids.length);
      assert.deepEqual(
        healthy.events.map((event) => event.id),
        ids,
      );
      assert.equal(session.closed, false, 'the connection stays open');
      healthy.close();
    } finally {
      session.destroy();
      await hub.close();
    }
  });

  test('shutdown ends the streams and sends GOAWAY', async () => {
    const hub = await startTestHub('memory', {
      MERCURE_H2C_PORT: '0',
      MERCURE_ANONYMOUS: '1',
      MERCURE_DRAIN_WINDOW: '0',
    });
    const session = await connectH2c(hub);
    // Listened for from the start: on Node 26 the connection closes before shutdown() resolves.
    const goaway = once(session, 'goaway');
    const closed = once(session, 'close');
    const stream = await SseStream.openOn(session, path([['match', 'https://example.com/a']]));
    await hub.server.shutdown('test');
    await stream.closed();
    await goaway;
    await closed;
  });
});

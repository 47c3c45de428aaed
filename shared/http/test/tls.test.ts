import assert from 'node:assert/strict';
import { once } from 'node:events';
import { rmSync } from 'node:fs';
import type { IncomingMessage } from 'node:http';
import { connect as connectHttp2 } from 'node:http2';
import { request } from 'node:https';
import { after, test } from 'node:test';
import { connect as connectTls } from 'node:tls';
import { createMetrics } from '@herald/metrics';
import { createTestCertificates } from '@herald/testkit';
import { createServerKit, type ServerKit, type TlsHttp2Options } from '../src/index.js';

const certificates = createTestCertificates();
after(() => rmSync(certificates.directory, { recursive: true, force: true }));

function tlsKit(tlsHttp2?: TlsHttp2Options, shutdownTimeout = 1000): ServerKit {
  const kit = createServerKit({
    name: 'tls',
    metrics: createMetrics(),
    config: {
      PORT: 0,
      HOST: '127.0.0.1',
      TLS_CERT_FILE: certificates.certFile,
      TLS_KEY_FILE: certificates.keyFile,
      TRUSTED_PROXIES: [],
      LOG_LEVEL: 'silent',
      SHUTDOWN_TIMEOUT: shutdownTimeout,
    },
    tlsHttp2,
  });
  kit.app.get('/protocol', async (request) => ({
    protocol: request.protocol,
    version: request.raw.httpVersion,
  }));
  return kit;
}

/** GET over HTTPS/1.1: the parsed body. */
function getHttp1(port: number, path: string): Promise<unknown> {
  return new Promise((resolve, reject) => {
    request({ host: '127.0.0.1', port, path, rejectUnauthorized: false }, (response) => {
      let text = '';
      response.on('data', (chunk) => (text += chunk));
      response.on('end', () => resolve(JSON.parse(text)));
    })
      .on('error', reject)
      .end();
  });
}

/** The protocol the server picks by ALPN among `offered` (false: none of them). */
async function negotiated(port: number, offered: string[]): Promise<string | false | null> {
  const socket = connectTls({ host: '127.0.0.1', port, rejectUnauthorized: false, ALPNProtocols: offered });
  try {
    await once(socket, 'secureConnect');
    return socket.alpnProtocol;
  } finally {
    socket.destroy();
  }
}

test('with TLS_CERT_FILE and TLS_KEY_FILE the listener speaks HTTPS', async () => {
  const kit = tlsKit();
  const { port } = await kit.listen();
  try {
    assert.deepEqual(await getHttp1(port, '/protocol'), { protocol: 'https', version: '1.1' });
    assert.equal(await negotiated(port, ['h2', 'http/1.1']), 'http/1.1', 'no HTTP/2 without tlsHttp2');
  } finally {
    await kit.shutdown('test over');
  }
});

test('with tlsHttp2 the TLS port speaks HTTP/2 to clients that offer it, HTTP/1.1 to the others', async () => {
  const kit = tlsKit({ maxStreams: 5, idleTimeout: 60_000 });
  const { port } = await kit.listen();
  const session = connectHttp2(`https://127.0.0.1:${port}`, { rejectUnauthorized: false });
  try {
    assert.equal(await negotiated(port, ['h2', 'http/1.1']), 'h2');
    const [settings] = (await once(session, 'remoteSettings')) as [{ maxConcurrentStreams?: number }];
    assert.equal(settings.maxConcurrentStreams, 5);
    const stream = session.request({ ':path': '/protocol' });
    const [headers] = (await once(stream, 'response')) as [Record<string, unknown>];
    assert.equal(headers[':status'], 200);
    assert.match(String(headers['x-request-id']), /^[\w-]{36}$/);
    let body = '';
    for await (const chunk of stream) body += chunk;
    assert.deepEqual(JSON.parse(body), { protocol: 'https', version: '2.0' });
    // A client without ALPN, or offering HTTP/1.1 only, gets HTTP/1.1 on the same port, with the
    // bounds fastify gives its HTTPS server.
    assert.deepEqual(await getHttp1(port, '/protocol'), { protocol: 'https', version: '1.1' });
    const server = kit.app.server as unknown as { keepAliveTimeout: number; requestTimeout: number };
    assert.equal(server.keepAliveTimeout, 72_000);
    assert.equal(server.requestTimeout, 0);
  } finally {
    session.destroy();
    await kit.shutdown('test over');
  }
});

test('with tlsHttp2, the shutdown deadline cuts connections of both protocols', async () => {
  const kit = tlsKit({ maxStreams: 5, idleTimeout: 60_000 }, 300);
  // A request that never ends: only the deadline ends its connection.
  kit.app.get('/hang', (_request, reply) => {
    reply.hijack();
    reply.raw.writeHead(200, { 'content-type': 'text/plain' });
    reply.raw.write('started');
  });
  const { port } = await kit.listen();
  const session = connectHttp2(`https://127.0.0.1:${port}`, { rejectUnauthorized: false });
  const sessionClosed = once(session, 'close');
  const http2Stream = session.request({ ':path': '/hang' });
  http2Stream.on('error', () => undefined);
  await once(http2Stream, 'response');
  // Both requests are in flight (their heads answered) before the shutdown starts.
  const http1 = await new Promise<IncomingMessage>((resolve, reject) => {
    request({ host: '127.0.0.1', port, path: '/hang', rejectUnauthorized: false }, resolve)
      .on('error', reject)
      .end();
  });
  http1.resume();
  // Cut, the response closes ('aborted'): without the cut it would never end.
  const http1Closed = new Promise((resolve) => {
    http1.on('error', () => undefined);
    http1.once('close', resolve);
  });
  await kit.shutdown('test over');
  await Promise.all([sessionClosed, http1Closed]);
});

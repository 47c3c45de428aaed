import type { IncomingMessage, ServerResponse } from 'node:http';
import { createServer, type Http2Server, type ServerHttp2Session } from 'node:http2';
import type { AddressInfo, Socket } from 'node:net';

export interface H2cOptions {
  readonly port: number;
  /** Streams one connection may hold open at once (the SETTINGS_MAX_CONCURRENT_STREAMS it announces). */
  readonly maxStreams: number;
  /**
   * A connection with no frame either way for this long is sent GOAWAY: its open streams finish,
   * no new one starts (what keepAliveTimeout does for HTTP/1.1; SSE heartbeats are frames).
   */
  readonly idleTimeout: number;
}

export interface H2cListener {
  listen(host: string): Promise<AddressInfo>;
  /** Stops accepting, and sends GOAWAY to every connection: their open streams may finish. */
  close(): Promise<void>;
  /** Cuts every connection (the shutdown's deadline passed). */
  destroy(): void;
}

/**
 * A listener speaking cleartext HTTP/2 with prior knowledge (h2c, RFC 9113 §3.3), for proxies
 * that reach the pods over HTTP/2 (Envoy, Istio, Gateway API backends with `appProtocol:
 * kubernetes.io/h2c`): many requests, SSE streams included, share one connection. It serves the
 * same app through node's compatibility API (`handler` is fastify's routing). A port of its own:
 * node's cleartext HTTP/2 server cannot fall back to HTTP/1.1, which probes and browsers speak
 * on the main port.
 */
export function h2cListener(
  options: H2cOptions,
  handler: (request: IncomingMessage, response: ServerResponse) => void,
): H2cListener {
  const sessions = new Set<ServerHttp2Session>();
  const server: Http2Server = createServer(
    { settings: { maxConcurrentStreams: options.maxStreams } },
    // The compatibility API's request and response have the shape fastify reads and writes.
    handler as unknown as Parameters<typeof createServer>[1],
  );
  // Events are written as they come, not held for the peer's ACK (Nagle): once per connection,
  // for every stream on it.
  server.on('connection', (socket: Socket) => socket.setNoDelay(true));
  server.on('session', (session) => {
    sessions.add(session);
    session.once('close', () => sessions.delete(session));
  });
  server.setTimeout(options.idleTimeout);
  server.on('timeout', (session: ServerHttp2Session) => session.close());
  // A peer's protocol error ends its own session (node answers GOAWAY); nothing to do here.
  server.on('sessionError', () => undefined);

  return {
    listen(host) {
      return new Promise((resolve, reject) => {
        server.once('error', reject);
        server.listen(options.port, host, () => {
          server.off('error', reject);
          resolve(server.address() as AddressInfo);
        });
      });
    },
    close() {
      const closed = new Promise<void>((resolve) => server.close(() => resolve()));
      for (const session of sessions) session.close();
      return closed;
    },
    destroy() {
      for (const session of sessions) session.destroy();
    },
  };
}

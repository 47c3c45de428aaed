import { randomUUID } from 'node:crypto';
import { readFileSync } from 'node:fs';
import type { AddressInfo, Server, Socket } from 'node:net';
import type { Metrics } from '@herald/metrics';
import { metricsPlugin } from '@herald/metrics';
import { replyWithin } from '@herald/redis';
import Fastify, {
  type FastifyContextConfig,
  type FastifyInstance,
  type FastifyServerOptions,
  type RouteOptions,
} from 'fastify';
import { type H2cOptions, h2cListener } from './h2c.js';
import { Lifecycle } from './lifecycle.js';
import { logDestination } from './log-destination.js';
import { redactText, redactUrl } from './redact.js';
import type { HttpConfig } from './settings.js';

export interface ServerKitOptions {
  /** Service name, logged on every line (`hub`, `broker`). */
  readonly name: string;
  readonly config: HttpConfig;
  readonly metrics: Metrics;
  /** Paths serving Prometheus metrics (default `/metrics`). */
  readonly metricsPaths?: readonly string[];
  /**
   * Route config of the kit's own routes (probes, metrics): the broker declares their access
   * level here, as every broker route must.
   */
  readonly routeConfig?: FastifyContextConfig;
  /**
   * An `onRoute` hook installed before any route, the kit's own included: it sees (and may
   * refuse by throwing) every route of the app (the broker checks access declarations).
   */
  readonly onRoute?: (route: RouteOptions) => void;
  /** Request body limit in bytes (fastify's default: 1 MiB). */
  readonly bodyLimit?: number;
  /** Extra fastify options (tests pass `logger: false`). */
  readonly fastify?: Omit<FastifyServerOptions, 'https' | 'http2'>;
  /** How often readiness is evaluated without a probe (default `READINESS_INTERVAL_MS`, 5 s). */
  readonly readinessIntervalMs?: number;
  /** A second listener, cleartext HTTP/2 for proxies (h2c.ts); none when undefined. */
  readonly h2c?: H2cOptions | undefined;
  /**
   * With TLS (TLS_CERT_FILE): the main listener also speaks HTTP/2, chosen by ALPN (`h2`, then
   * `http/1.1` for clients without it); HTTP/1.1 only when undefined.
   */
  readonly tlsHttp2?: TlsHttp2Options | undefined;
}

export interface TlsHttp2Options {
  /** Streams one connection may hold open at once (the SETTINGS_MAX_CONCURRENT_STREAMS it announces). */
  readonly maxStreams: number;
  /** A connection with no frame either way for this long is sent GOAWAY (as on the h2c port). */
  readonly idleTimeout: number;
}

export interface ServerKit {
  readonly app: FastifyInstance;
  readonly lifecycle: Lifecycle;
  /** Binds PORT/HOST (and the h2c port, when set); resolves with the bound address. */
  listen(): Promise<AddressInfo>;
  /** The h2c listener's bound address, once listening (undefined without one). */
  readonly h2cAddress: AddressInfo | undefined;
  /**
   * Graceful stop: readiness fails first, drain hooks run, then the listener stops accepting and
   * in-flight requests finish; all within SHUTDOWN_TIMEOUT, after which connections are cut.
   */
  shutdown(reason: string): Promise<void>;
  /** SIGTERM/SIGINT → shutdown → exit 0 (exit 1 if the shutdown itself failed). */
  exitOnSignals(): void;
}

const REQUEST_ID = /^[\w.:@/+=-]{1,128}$/;

/** Log fields that may hold a credential, wherever a caller puts headers. */
const LOGGED_SECRETS = [
  'headers.authorization',
  'headers.cookie',
  'headers["set-cookie"]',
  '*.headers.authorization',
  '*.headers.cookie',
  '*.headers["set-cookie"]',
];

function trustProxy(proxies: readonly string[]): boolean | string[] {
  if (proxies.length === 1 && proxies[0]?.toLowerCase() === 'true') return true;
  return [...proxies];
}

function tlsOptions(config: HttpConfig): { cert: Buffer; key: Buffer } | undefined {
  const { TLS_CERT_FILE: certFile, TLS_KEY_FILE: keyFile } = config;
  if (!certFile && !keyFile) return undefined;
  if (!certFile || !keyFile) {
    throw new Error('TLS_CERT_FILE and TLS_KEY_FILE must be set together');
  }
  return { cert: readFileSync(certFile), key: readFileSync(keyFile) };
}

/**
 * fastify's server options for the main listener: HTTPS, or with `http2` HTTP/2 and HTTP/1.1 on
 * one TLS port (node's secure HTTP/2 server with `allowHTTP1`: ALPN picks, per connection).
 */
function listenerOptions(
  https: { cert: Buffer; key: Buffer } | undefined,
  http2: TlsHttp2Options | undefined,
): Record<string, unknown> {
  if (!https) return {};
  if (!http2) return { https };
  return {
    http2: true,
    https: { ...https, allowHTTP1: true, settings: { maxConcurrentStreams: http2.maxStreams } },
    http2SessionTimeout: http2.idleTimeout,
  };
}

export function createServerKit(options: ServerKitOptions): ServerKit {
  const { config, metrics } = options;
  const https = tlsOptions(config);
  const http2 = https ? options.tlsHttp2 : undefined;
  const serverOptions: FastifyServerOptions = {
    logger: {
      level: config.LOG_LEVEL,
      base: { service: options.name },
      // Defence in depth (issue #8): the req serializer below logs no header, but a log call
      // that passes headers or a raw request must not leak the bearer token or the Mercure cookie.
      redact: { paths: LOGGED_SECRETS, censor: '[REDACTED]' },
      // The last word on every line, serializers or not: fastify puts raw URLs in messages.
      hooks: { streamWrite: redactText },
      // JSON lines on stdout, pretty on a terminal; EPIPE (a closed pipe) ends logging, not the exit.
      stream: logDestination(),
      serializers: {
        req: (request) => ({
          method: request.method,
          url: redactUrl(request.url),
          remoteAddress: request.ip,
        }),
      },
    },
    trustProxy: trustProxy(config.TRUSTED_PROXIES),
    bodyLimit: options.bodyLimit ?? 1024 * 1024,
    requestIdHeader: false,
    genReqId: (request) => {
      const offered = request.headers['x-request-id'];
      return typeof offered === 'string' && REQUEST_ID.test(offered) ? offered : randomUUID();
    },
    ...options.fastify,
  };
  // One call for the three listeners (HTTP, HTTPS, HTTP/2 and HTTP/1.1 on TLS): fastify's typings
  // split them into overloads by their literal options.
  const app = (Fastify as (options: Record<string, unknown>) => unknown)({
    ...serverOptions,
    ...listenerOptions(https, http2),
  }) as FastifyInstance;
  const sockets = http2 ? prepareTlsHttp2(app) : undefined;

  const lifecycle = new Lifecycle(metrics.ready);
  const h2c = options.h2c ? h2cListener(options.h2c, app.routing) : undefined;
  let h2cAddress: AddressInfo | undefined;
  // With the app: after preClose (the hub ends its streams there), its connections get GOAWAY.
  if (h2c) app.addHook('onClose', () => h2c.close());
  if (options.onRoute) app.addHook('onRoute', options.onRoute);
  // Readiness is evaluated on its own timer from the moment the app is ready (before it
  // listens: a node waiting for Redis already reports 0), not only when /readyz is asked.
  app.addHook('onReady', async () => lifecycle.startWatching(options.readinessIntervalMs));
  app.addHook('onClose', async () => lifecycle.stopWatching());

  // Callback-style: an async hook costs a promise and a microtask turn on every request (issue #14).
  app.addHook('onRequest', (request, reply, done) => {
    reply.header('x-request-id', request.id);
    done();
  });
  const routeConfig = { ...options.routeConfig };
  app.register(metricsPlugin, { metrics, paths: options.metricsPaths ?? ['/metrics'], routeConfig });
  app.get('/healthz', { logLevel: 'warn', config: routeConfig }, async () => ({ status: 'ok' }));
  app.get('/readyz', { logLevel: 'warn', config: routeConfig }, async (_request, reply) => {
    const reasons = await lifecycle.readiness();
    if (reasons.length > 0) return reply.code(503).send({ status: 'not ready', reasons });
    return { status: 'ready' };
  });

  let shuttingDown: Promise<void> | undefined;
  async function shutdown(reason: string): Promise<void> {
    shuttingDown ??= (async () => {
      const started = Date.now();
      const deadline = started + config.SHUTDOWN_TIMEOUT;
      app.log.info({ reason, timeoutMs: config.SHUTDOWN_TIMEOUT }, 'shutting down: draining');
      // 1. Readiness flips to 503 inside drain(), before any hook runs, while the listener still
      //    answers (probes see 503, not a refused connection; the hub refuses new subscribers).
      // 2. Drain hooks finish their work (the hub closes streams spread over its drain window).
      // 3. app.close() stops the listener and waits for the requests still in flight.
      // `finished` never rejects (a failure is held as a value), so the bound is the only
      // rejection below, whatever error types the hooks throw.
      const finished = (async () => {
        await lifecycle.drain(deadline);
        await app.close();
      })().then(
        () => undefined,
        (error: unknown) => ({ error }),
      );
      const failed = await replyWithin(finished, config.SHUTDOWN_TIMEOUT, 'drain and close').catch(() => {
        // Cut what is left and stop waiting: a close hook stuck on a dead dependency (Redis
        // down, reconnecting forever) must not hold the process past its grace period.
        app.log.warn('shutdown timeout reached: closing remaining connections');
        if (sockets) for (const socket of sockets) socket.destroy();
        else app.server.closeAllConnections();
        h2c?.destroy();
        return undefined;
      });
      if (failed) throw failed.error;
      app.log.info({ elapsedMs: Date.now() - started }, 'shutdown complete');
    })();
    return shuttingDown;
  }

  return {
    app,
    lifecycle,
    get h2cAddress() {
      return h2cAddress;
    },
    async listen() {
      await app.listen({ port: config.PORT, host: config.HOST });
      const address = app.server.address() as AddressInfo;
      app.log.info(
        { port: address.port, host: config.HOST, tls: Boolean(https), http2: Boolean(http2) },
        `${options.name} listening`,
      );
      if (h2c) {
        h2cAddress = await h2c.listen(config.HOST);
        app.log.info({ port: h2cAddress.port, host: config.HOST }, `${options.name} listening for h2c`);
      }
      return address;
    },
    shutdown,
    exitOnSignals() {
      for (const signal of ['SIGTERM', 'SIGINT'] as const) {
        process.once(signal, () => {
          shutdown(signal).then(
            () => process.exit(0),
            (error: unknown) => {
              app.log.error({ err: error }, 'shutdown failed');
              process.exit(1);
            },
          );
        });
      }
    },
  };
}

/**
 * Prepares the TLS listener speaking HTTP/2 (node's secure HTTP/2 server) and returns its open
 * connections, kept current: that server has no closeAllConnections (its HTTP/1.1 connections
 * included) for the shutdown's deadline. Each is set no-delay once, for all its streams: events
 * are written as they come, not held for the peer's ACK (HTTP/1.1 subscribers set their own
 * socket, as on the other listeners).
 */
function prepareTlsHttp2(app: FastifyInstance): ReadonlySet<Socket> {
  const server = app.server as unknown as Server & { keepAliveTimeout?: number; requestTimeout?: number };
  // Its HTTP/1.1 connections keep fastify's bounds, as on the HTTPS server (node's own for them:
  // none or 5 s of keep-alive by version, 300 s to receive a request).
  const bounds = app.initialConfig as { keepAliveTimeout?: number; requestTimeout?: number };
  server.keepAliveTimeout = bounds.keepAliveTimeout;
  server.requestTimeout = bounds.requestTimeout;
  const sockets = new Set<Socket>();
  server.on('connection', (socket: Socket) => {
    socket.setNoDelay(true);
    sockets.add(socket);
    socket.once('close', () => sockets.delete(socket));
  });
  return sockets;
}

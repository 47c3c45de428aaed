import { createHmac } from 'node:crypto';
import { once } from 'node:events';
import { request as httpRequest, type IncomingHttpHeaders } from 'node:http';
import type { ClientHttp2Session } from 'node:http2';
import type { Readable } from 'node:stream';
import { createMetrics } from '@herald/metrics';
import { REDIS_TOPOLOGY_VARIABLES, stopTestRedis, testRedisEnvironment, uniquePrefix } from '@herald/testkit';
import { parseHubConfig } from '../src/config.js';
import { type HubOptions, type HubServer, startHub } from '../src/hub.js';

export const PUBLISHER_SECRET = 'publisher-secret-for-tests-only-0123456789';
export const SUBSCRIBER_SECRET = 'subscriber-secret-for-tests-only-0123456789';
export const BACKENDS = ['memory', 'redis'] as const;
export type Backend = (typeof BACKENDS)[number];

const base64url = (value: string | Buffer) => Buffer.from(value).toString('base64url');

/** An HS256 JWS (signed here with node:crypto so tests need no JWT library). */
export function signToken(payload: Record<string, unknown>, secret: string): string {
  const header = base64url(JSON.stringify({ alg: 'HS256', typ: 'JWT' }));
  const body = base64url(JSON.stringify(payload));
  const signature = createHmac('sha256', secret).update(`${header}.${body}`).digest('base64url');
  return `${header}.${body}.${signature}`;
}

export interface Selector {
  match: string;
  matchType?: string;
  payload?: unknown;
}

export function publisherToken(
  publish: Selector[] = [{ match: '*' }],
  extra: Record<string, unknown> = {},
): string {
  return signToken({ mercure: { publish }, ...extra }, PUBLISHER_SECRET);
}

export function subscriberToken(
  subscribe: Selector[],
  options: { payload?: unknown; exp?: number } = {},
): string {
  const mercure = { subscribe, ...(options.payload !== undefined ? { payload: options.payload } : {}) };
  return signToken(
    { mercure, ...(options.exp !== undefined ? { exp: options.exp } : {}) },
    SUBSCRIBER_SECRET,
  );
}

/** Requests look like they came through a trusted TLS-terminating proxy. */
export const SECURE = { 'x-forwarded-proto': 'https' } as const;

export interface TestHub {
  readonly server: HubServer;
  readonly origin: string;
  readonly url: string;
  /** `http://127.0.0.1:<port>` of the h2c listener (MERCURE_H2C_PORT set), else undefined. */
  readonly h2cOrigin: string | undefined;
  close(): Promise<void>;
}

export async function startTestHub(
  backend: Backend,
  environment: Record<string, string> = {},
  /** Options of the node itself (a test's `clock`). */
  options: Pick<HubOptions, 'clock'> = {},
): Promise<TestHub> {
  // HERALD_TEST_TOPOLOGY picks standalone, Sentinel or Cluster; a test that names its own Redis
  // (a proxy's URL) keeps it.
  const ownRedis = REDIS_TOPOLOGY_VARIABLES.some((name) => name in environment);
  const redis =
    backend === 'redis'
      ? { ...(ownRedis ? {} : await testRedisEnvironment()), MERCURE_REDIS_PREFIX: uniquePrefix('hub') }
      : {};
  const config = parseHubConfig({
    PORT: '0',
    HOST: '127.0.0.1',
    LOG_LEVEL: 'silent',
    TRUSTED_PROXIES: '127.0.0.1',
    MERCURE_PUBLISHER_JWT_KEY: PUBLISHER_SECRET,
    MERCURE_SUBSCRIBER_JWT_KEY: SUBSCRIBER_SECRET,
    ...redis,
    ...environment,
  });
  const server = await startHub(config, { ...options, metrics: createMetrics(), probeInterval: 500 });
  const address = server.app.server.address();
  const port = typeof address === 'object' && address ? address.port : 0;
  const origin = `http://127.0.0.1:${port}`;
  const h2c = server.kit.h2cAddress;
  return {
    server,
    origin,
    url: `${origin}/.well-known/mercure`,
    h2cOrigin: h2c ? `http://127.0.0.1:${h2c.port}` : undefined,
    close: () => server.app.close(),
  };
}

export async function cleanupRedis(): Promise<void> {
  await stopTestRedis();
}

export interface SseEvent {
  id?: string;
  event?: string;
  data: string;
  retry?: number;
  /** `topics` fields (MERCURE_TOPICS_FIELD), in order; present only when the event has some. */
  topics?: string[];
}

/** A minimal SSE client over node:http: the tests parse the stream themselves. */
export class SseStream {
  readonly events: SseEvent[] = [];
  comments = 0;
  ended = false;
  private buffer = '';
  /** Everything the stream carried, as received. */
  text = '';
  private current: {
    id?: string;
    event?: string;
    data: string[];
    retry?: number;
    topics: string[];
    seen: boolean;
  } = { data: [], topics: [], seen: false };
  private readonly listeners = new Set<() => void>();

  private constructor(
    readonly status: number,
    readonly headers: IncomingHttpHeaders,
    readonly body: string,
    private readonly response: Readable,
  ) {}

  static open(url: string, headers: Record<string, string> = {}): Promise<SseStream> {
    return new Promise((resolve, reject) => {
      const request = httpRequest(url, { headers: { accept: 'text/event-stream', ...SECURE, ...headers } });
      request.on('error', reject);
      request.on('response', (response) => {
        SseStream.read(response.statusCode ?? 0, response.headers, response).then(resolve, reject);
      });
      request.end();
    });
  }

  /** The same as one stream of an HTTP/2 connection (the hub's h2c listener); `path` with its query. */
  static openOn(
    session: ClientHttp2Session,
    path: string,
    headers: Record<string, string> = {},
  ): Promise<SseStream> {
    return new Promise((resolve, reject) => {
      const request = session.request({ ':path': path, accept: 'text/event-stream', ...SECURE, ...headers });
      request.on('error', reject);
      request.on('response', (responseHeaders) => {
        const { ':status': status, ...rest } = responseHeaders;
        SseStream.read(Number(status), rest as IncomingHttpHeaders, request).then(resolve, reject);
      });
    });
  }

  private static read(status: number, headers: IncomingHttpHeaders, response: Readable): Promise<SseStream> {
    response.setEncoding('utf8');
    if (status !== 200) {
      let body = '';
      response.on('data', (chunk: string) => {
        body += chunk;
      });
      return once(response, 'end').then(() => new SseStream(status, headers, body, response));
    }
    const stream = new SseStream(200, headers, '', response);
    response.on('data', (chunk: string) => stream.feed(chunk));
    const finish = () => {
      stream.ended = true;
      stream.notify();
    };
    response.on('end', finish);
    response.on('close', finish);
    response.on('error', finish);
    // Resolve once the opening comment arrived: the subscription is registered by then.
    return stream.until(() => stream.comments > 0 || stream.ended).then(() => stream);
  }

  private feed(chunk: string): void {
    this.text += chunk;
    this.buffer += chunk;
    let newline = this.buffer.indexOf('\n');
    while (newline !== -1) {
      const line = this.buffer.slice(0, newline);
      this.buffer = this.buffer.slice(newline + 1);
      this.line(line);
      newline = this.buffer.indexOf('\n');
    }
    this.notify();
  }

  private line(line: string): void {
    if (line === '') {
      if (this.current.seen) {
        const { id, event, data, retry, topics } = this.current;
        this.events.push({
          data: data.join('\n'),
          ...(id !== undefined ? { id } : {}),
          ...(event !== undefined ? { event } : {}),
          ...(retry !== undefined ? { retry } : {}),
          ...(topics.length > 0 ? { topics } : {}),
        });
      }
      this.current = { data: [], topics: [], seen: false };
      return;
    }
    if (line.startsWith(':')) {
      this.comments += 1;
      return;
    }
    const colon = line.indexOf(':');
    const field = colon === -1 ? line : line.slice(0, colon);
    let value = colon === -1 ? '' : line.slice(colon + 1);
    if (value.startsWith(' ')) value = value.slice(1);
    this.current.seen = true;
    if (field === 'data') this.current.data.push(value);
    else if (field === 'id') this.current.id = value;
    else if (field === 'event') this.current.event = value;
    else if (field === 'retry') this.current.retry = Number(value);
    else if (field === 'topics') this.current.topics.push(value);
  }

  private notify(): void {
    for (const listener of [...this.listeners]) listener();
  }

  /** Resolves when the condition holds (checked on every chunk); rejects if the stream ends first. */
  until(condition: () => boolean): Promise<void> {
    return new Promise((resolve, reject) => {
      const check = () => {
        if (condition()) {
          this.listeners.delete(check);
          resolve();
        } else if (this.ended) {
          this.listeners.delete(check);
          reject(new Error(`stream ended first (${this.events.length} events)`));
        }
      };
      this.listeners.add(check);
      check();
    });
  }

  /** Resolves when the stream has been closed by the server. */
  closed(): Promise<void> {
    return new Promise((resolve) => {
      const check = () => {
        if (this.ended) {
          this.listeners.delete(check);
          resolve();
        }
      };
      this.listeners.add(check);
      check();
    });
  }

  waitForEvents(count: number): Promise<SseEvent[]> {
    return this.until(() => this.events.length >= count).then(() => this.events.slice(0, count));
  }

  close(): void {
    this.response.destroy();
  }
}

export interface PublishResult {
  status: number;
  body: string;
  headers: Headers;
}

/** POSTs a form to the hub; `fields` may repeat names. */
export async function publish(
  url: string,
  fields: [string, string][] | Record<string, string>,
  options: { token?: string | undefined; headers?: Record<string, string> } = {},
): Promise<PublishResult> {
  const body = new URLSearchParams(Array.isArray(fields) ? fields : Object.entries(fields));
  const headers: Record<string, string> = {
    'content-type': 'application/x-www-form-urlencoded',
    ...SECURE,
    ...(options.token ? { authorization: `Bearer ${options.token}` } : {}),
    ...options.headers,
  };
  const response = await fetch(url, { method: 'POST', headers, body });
  return { status: response.status, body: await response.text(), headers: response.headers };
}

/** Publishes and asserts success; returns the update id. */
export async function publishOk(
  url: string,
  fields: [string, string][] | Record<string, string>,
  token = publisherToken(),
): Promise<string> {
  const result = await publish(url, fields, { token });
  if (result.status !== 200) throw new Error(`publish failed: ${result.status} ${result.body}`);
  return result.body;
}

export function subscribeUrl(base: string, parameters: [string, string][]): string {
  return `${base}?${new URLSearchParams(parameters)}`;
}

/*
 * Issue #8, defect 1: the access level is a property of the route the router matched, so no
 * spelling of a request target reaches a handler under another route's rules. Requests are sent
 * as raw bytes over `node:net`: HTTP clients normalise targets (absolute form, dot segments,
 * escapes) before sending, which would hide exactly what is tested here.
 */
import assert from 'node:assert/strict';
import { connect } from 'node:net';
import { after, before, describe, test } from 'node:test';
import { type AccessLevel, classifyBrokerRoute, isAccessLevel } from '@herald/auth';
import { type Broker, brokerSpec, startBroker } from '@herald/broker';
import { parseEnv } from '@herald/config';
import { SignJWT } from 'jose';
import { JWT_TEST_SECRET, startJwtBroker } from './nodes.js';

const SECRET = JWT_TEST_SECRET;
let broker: Broker;

before(async () => {
  broker = await startJwtBroker();
});
after(() => broker.close());

function token(roles: string[]): Promise<string> {
  return new SignJWT({ roles })
    .setProtectedHeader({ alg: 'HS256' })
    .setSubject('route-access')
    .setExpirationTime('5m')
    .sign(new TextEncoder().encode(SECRET));
}

interface RawReply {
  readonly status: number;
  readonly headers: Readonly<Record<string, string>>;
  readonly body: string;
}

/** One request, written byte for byte: the target goes on the wire exactly as given. */
function raw(method: string, target: string, bearer?: string, body?: unknown): Promise<RawReply> {
  const payload = body === undefined ? '' : JSON.stringify(body);
  const lines = [
    `${method} ${target} HTTP/1.1`,
    'Host: 127.0.0.1',
    'Connection: close',
    ...(bearer ? [`Authorization: Bearer ${bearer}`] : []),
    ...(body === undefined ? [] : ['Content-Type: application/json']),
    `Content-Length: ${Buffer.byteLength(payload)}`,
  ];
  return new Promise((resolve, reject) => {
    const socket = connect(broker.address.port, '127.0.0.1');
    const chunks: Buffer[] = [];
    socket.on('data', (chunk: Buffer) => chunks.push(chunk));
    socket.on('error', reject);
    socket.on('end', () => {
      const text = Buffer.concat(chunks).toString('utf8');
      const [head = '', ...rest] = text.split('\r\n\r\n');
      const [statusLine = '', ...headerLines] = head.split('\r\n');
      const status = Number(/^HTTP\/1\.1 (\d{3})/.exec(statusLine)?.[1]);
      if (!Number.isInteger(status))
        return reject(
          new Error(`no status line for ${method} ${JSON.stringify(target)}: ${JSON.stringify(text)}`),
        );
      const headers: Record<string, string> = {};
      for (const line of headerLines) {
        const colon = line.indexOf(':');
        if (colon > 0) headers[line.slice(0, colon).toLowerCase()] = line.slice(colon + 1).trim();
      }
      resolve({ status, headers, body: rest.join('\r\n\r\n') });
    });
    // write, not end: node's server drops a request whose client half-closed before the answer.
    socket.write(`${lines.join('\r\n')}\r\n\r\n${payload}`);
  });
}

/** Spellings of one path that a router may read as that path (or as something else). */
function spellings(path: string): string[] {
  const [, first = '', ...others] = path.split('/');
  const rest = others.join('/');
  const last = path.slice(path.lastIndexOf('/') + 1);
  const parent = path.slice(0, path.lastIndexOf('/'));
  return [
    `http://x${path}`,
    `https://x${path}`,
    `HTTP://X${path}`,
    `http://x:80${path}`,
    `http://user@x${path}`,
    `http://x/${path}`,
    `//${path.slice(1)}`,
    `//x${path}`,
    `${path}/`,
    `http://x${path}/`,
    `${path}//`,
    `/${first}//${rest}`,
    `${path}?a=1`,
    `${path}#frag`,
    `${path};a=1`,
    `${parent};a=1/${last}`,
    `${parent}%2F${last}`,
    `${parent}%2f${last}`,
    `/${first}%2F${rest.replaceAll('/', '%2F')}`,
    `${parent}/%2e%2e/${parent.slice(parent.lastIndexOf('/') + 1)}/${last}`,
    `${parent}/./${last}`,
    `${parent}/%2e/${last}`,
    `/x/..${path}`,
    `/x/%2e%2e${path}`,
    `/x%2F..${path}`,
    path.toUpperCase(),
    `/${first.toUpperCase()}/${rest}`,
    `${parent}/${last.toUpperCase()}`,
    `${parent}/${last.charAt(0).toUpperCase()}${last.slice(1)}`,
    path.replace('/system/', '/%73ystem/').replace('/resources/', '/%72esources/'),
    `http://x${path.replace('/system/', '/%73ystem/').replace('/resources/', '/%72esources/')}`,
    `${parent}/${last
      .split('')
      .map((c) => `%${c.charCodeAt(0).toString(16)}`)
      .join('')}`,
    `${path}%00`,
    `${path}%20`,
    `${path}\t`,
  ];
}

function is2xx(status: number): boolean {
  return status >= 200 && status < 300;
}

describe('a read-write token never reaches an admin handler, whatever the target spelling', () => {
  // [method, canonical admin path, body]
  // biome-ignore format: a table, one case per line
  const ADMIN: readonly (readonly [string, string, unknown])[] = [
    ['POST', '/api/v1/system/maintenance', { enabled: true }],
    ['POST', '/api/v1/system/maintenance/pop', { enabled: true }],
    ['GET', '/api/v1/system/maintenance', undefined],
    ['HEAD', '/api/v1/system/maintenance', undefined],
    ['DELETE', '/api/v1/resources/queues/route.access.q', undefined],
    ['DELETE', '/api/v1/consumer-groups/route.access.g', undefined],
    ['POST', '/api/v1/stats/refresh', undefined],
  ];
  let admin: string;
  let readWrite: string;
  before(async () => {
    admin = await token(['admin']);
    readWrite = await token(['read-write']);
    for (const queue of ['route.access.q', 'route.access.gq']) {
      const pushed = await raw('POST', '/api/v1/push', admin, { items: [{ queue, payload: 1 }] });
      assert.equal(pushed.status, 201);
    }
    // The group lives on its own queue, so the queue-deletion attempts cannot take it along.
    const subscribed = await raw(
      'GET',
      '/api/v1/pop/queue/route.access.gq?consumerGroup=route.access.g&subscriptionMode=all',
      admin,
    );
    assert.ok(is2xx(subscribed.status), `consumer group set up: ${subscribed.status}`);
  });

  for (const [method, path, body] of ADMIN) {
    test(`${method} ${path}`, async () => {
      const outcomes: string[] = [];
      for (const target of [path, ...spellings(path)]) {
        const reply = await raw(method, target, readWrite, body);
        if (is2xx(reply.status)) outcomes.push(`${target} → ${reply.status} ${reply.body}`);
      }
      assert.deepEqual(outcomes, [], 'admin handlers answered a read-write token');
    });
  }

  test('afterwards the state is unchanged: maintenance off, the queue and its group still there', async () => {
    const flags = await raw('GET', '/api/v1/system/maintenance', admin);
    assert.equal(flags.status, 200);
    assert.deepEqual(JSON.parse(flags.body), {
      maintenanceMode: false,
      popMaintenanceMode: false,
      bufferedMessages: 0,
    });
    assert.equal((await raw('GET', '/api/v1/resources/queues/route.access.q', admin)).status, 200);
    assert.equal((await raw('GET', '/api/v1/consumer-groups/route.access.g', admin)).status, 200);
  });
});

test('an admin token still reaches the admin handler through the absolute form', async () => {
  const admin = await token(['admin']);
  const on = await raw('POST', 'http://x/api/v1/system/maintenance', admin, { enabled: true });
  assert.equal(on.status, 200);
  assert.equal(JSON.parse(on.body).maintenanceMode, true);
  const off = await raw('POST', 'http://x/api/v1/system/maintenance', admin, { enabled: false });
  assert.equal(off.status, 200);
  assert.equal(JSON.parse(off.body).maintenanceMode, false);
});

describe('a write-only token pushes, and only pushes, under every spelling', () => {
  // [method, canonical path, body]: every non-push route class a producer must not reach.
  // biome-ignore format: a table, one case per line
  const OTHERS: readonly (readonly [string, string, unknown])[] = [
    ['GET', '/api/v1/pop/queue/route.access.w', undefined],
    ['POST', '/api/v1/ack', { transactionId: 'x', partitionId: 'y', status: 'completed' }],
    ['GET', '/api/v1/resources/queues', undefined],
    ['GET', '/api/v1/messages', undefined],
    ['POST', '/api/v1/configure', { queue: 'route.access.w' }],
    ['GET', '/api/v1/status', undefined],
  ];
  let writer: string;
  before(async () => {
    writer = await token(['write-only']);
  });

  for (const [method, path, body] of OTHERS) {
    test(`${method} ${path} is refused`, async () => {
      const outcomes: string[] = [];
      for (const target of [path, ...spellings(path)]) {
        const reply = await raw(method, target, writer, body);
        if (is2xx(reply.status)) outcomes.push(`${target} → ${reply.status}`);
      }
      assert.deepEqual(outcomes, []);
    });
  }

  test('POST /api/v1/push is accepted through the spellings the router reads as push', async () => {
    for (const target of ['/api/v1/push', 'http://x/api/v1/push', '/api/v1/push?x=1', '/api/v1/%70ush']) {
      const reply = await raw('POST', target, writer, { items: [{ queue: 'route.access.w', payload: 1 }] });
      assert.equal(reply.status, 201, target);
    }
  });
});

describe('every registered route declares its level, and the declaration follows the route table of docs/auth.md', () => {
  const routes: { method: string; url: string; access: unknown }[] = [];
  let observed: Broker;
  before(async () => {
    observed = await startBroker(
      parseEnv(brokerSpec, { PORT: '0', HOST: '127.0.0.1', LOG_LEVEL: 'silent' }),
      {
        fastify: { logger: false },
        onRoute: (route) => {
          for (const method of [route.method].flat()) {
            routes.push({ method, url: route.url, access: route.config?.access });
          }
        },
      },
    );
  });
  after(() => observed.close());

  test('the hook saw the kit routes, the auto-added HEAD routes and the OPTIONS route', () => {
    const seen = new Set(routes.map(({ method, url }) => `${method} ${url}`));
    for (const expected of [
      'GET /healthz',
      'GET /readyz',
      'GET /metrics',
      'GET /metrics/prometheus',
      'HEAD /healthz',
      'HEAD /api/v1/system/maintenance',
      'OPTIONS *',
      'POST /api/v1/push',
    ]) {
      assert.ok(seen.has(expected), expected);
    }
    assert.ok(routes.length >= 60, `${routes.length} routes`);
  });

  test('each route has an explicit level equal to classifyBrokerRoute of its path', () => {
    const mismatches: string[] = [];
    for (const { method, url, access } of routes) {
      if (!isAccessLevel(access)) {
        mismatches.push(`${method} ${url}: no level`);
        continue;
      }
      // CORS preflight is public by the wire conventions (docs/broker-api.md), on any path; the
      // seed table does not list OPTIONS.
      const expected: AccessLevel =
        method === 'OPTIONS' && url === '*'
          ? 'public'
          : classifyBrokerRoute(method, url.replace(/:([A-Za-z0-9_]+)/g, 'sample-$1'));
      if (access !== expected)
        mismatches.push(`${method} ${url}: declared ${access}, table says ${expected}`);
    }
    assert.deepEqual(mismatches, []);
  });
});

test('CORS preflight: OPTIONS answers 204 without a token, on any path', async () => {
  for (const target of [
    '/api/v1/push',
    '/api/v1/system/maintenance',
    '/api/v1/pop/queue/q',
    '/no/such/route',
    '*',
  ]) {
    const reply = await raw('OPTIONS', target);
    assert.equal(reply.status, 204, target);
    assert.equal(reply.headers['access-control-allow-origin'], '*', target);
  }
});

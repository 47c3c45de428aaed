import assert from 'node:assert/strict';
import { once } from 'node:events';
import { connect } from 'node:http2';
import { test } from 'node:test';
import { createMetrics } from '@herald/metrics';
import { createServerKit, type HttpConfig } from '../src/index.js';

const config: HttpConfig = {
  PORT: 0,
  HOST: '127.0.0.1',
  TLS_CERT_FILE: undefined,
  TLS_KEY_FILE: undefined,
  TRUSTED_PROXIES: [],
  LOG_LEVEL: 'silent',
  SHUTDOWN_TIMEOUT: 5000,
};

function kit(overrides: Partial<HttpConfig> = {}) {
  return createServerKit({ name: 'test', config: { ...config, ...overrides }, metrics: createMetrics() });
}

test('/healthz answers while the process lives; /readyz runs every check', async () => {
  const { app, lifecycle } = kit();
  let redisReason: string | undefined = 'redis: connection refused';
  lifecycle.addReadinessCheck('redis', () => redisReason);
  assert.equal((await app.inject({ url: '/healthz' })).statusCode, 200);

  const notReady = await app.inject({ url: '/readyz' });
  assert.equal(notReady.statusCode, 503);
  assert.deepEqual(notReady.json(), { status: 'not ready', reasons: ['redis: redis: connection refused'] });

  redisReason = undefined;
  const ready = await app.inject({ url: '/readyz' });
  assert.equal(ready.statusCode, 200);
  assert.match((await app.inject({ url: '/metrics' })).body, /^herald_ready 1$/m);
});

test('a check that throws makes the node not ready, with its message', async () => {
  const { app, lifecycle } = kit();
  lifecycle.addReadinessCheck('pubsub', async () => {
    throw new Error('probe lost');
  });
  const response = await app.inject({ url: '/readyz' });
  assert.equal(response.statusCode, 503);
  assert.deepEqual(response.json().reasons, ['pubsub: probe lost']);
});

test('request ids: a sane incoming X-Request-Id is kept, anything else replaced by a UUID', async () => {
  const { app } = kit();
  const kept = await app.inject({ url: '/healthz', headers: { 'x-request-id': 'abc-123' } });
  assert.equal(kept.headers['x-request-id'], 'abc-123');
  const cases = ['', 'has space', 'x'.repeat(200), 'new\u2028line'];
  for (const offered of cases) {
    const replaced = await app.inject({ url: '/healthz', headers: { 'x-request-id': offered } });
    assert.match(String(replaced.headers['x-request-id']), /^[0-9a-f-]{36}$/, JSON.stringify(offered));
  }
});

test('X-Forwarded-* is believed only from a trusted proxy', async () => {
  const cases: [string[], string, string][] = [
    [[], '127.0.0.1', 'http'],
    [['10.0.0.1'], '127.0.0.1', 'http'],
    [['127.0.0.1'], '127.0.0.1', 'https'],
    [['127.0.0.0/8'], '127.0.0.1', 'https'],
    [['true'], '127.0.0.1', 'https'],
  ];
  for (const [proxies, remoteAddress, expected] of cases) {
    const { app } = kit({ TRUSTED_PROXIES: proxies });
    app.get('/protocol', async (request) => ({ protocol: request.protocol }));
    const response = await app.inject({
      url: '/protocol',
      remoteAddress,
      headers: { 'x-forwarded-proto': 'https' },
    });
    assert.equal(response.json().protocol, expected, JSON.stringify(proxies));
  }
});

test('TLS_CERT_FILE without TLS_KEY_FILE is refused', () => {
  assert.throws(
    () => kit({ TLS_CERT_FILE: '/tmp/cert.pem' }),
    /TLS_CERT_FILE and TLS_KEY_FILE must be set together/,
  );
});

test('draining fails readiness before anything else', async () => {
  const { app, lifecycle } = kit();
  const order: string[] = [];
  lifecycle.onDrain(async () => {
    const response = await app.inject({ url: '/readyz' });
    order.push(`readyz during drain: ${response.statusCode}`);
  });
  await lifecycle.drain(Date.now() + 1000);
  assert.deepEqual(order, ['readyz during drain: 503']);
  assert.equal(lifecycle.draining, true);
});

test('the h2c listener serves the app; a connection without frames for idleTimeout gets GOAWAY', async () => {
  const kit = createServerKit({
    name: 'test',
    config,
    metrics: createMetrics(),
    h2c: { port: 0, maxStreams: 10, idleTimeout: 200 },
  });
  kit.app.get('/hello', async (request) => ({ version: request.raw.httpVersion }));
  await kit.listen();
  const address = kit.h2cAddress;
  assert.ok(address);
  const session = connect(`http://127.0.0.1:${address.port}`);
  // Listened for from the start: 'close' may follow 'goaway' before a later listener is added.
  const goaway = once(session, 'goaway');
  const closed = once(session, 'close');
  try {
    const request = session.request({ ':path': '/hello' });
    const [headers] = (await once(request, 'response')) as [Record<string, unknown>];
    assert.equal(headers[':status'], 200);
    assert.match(String(headers['x-request-id']), /^[\w-]{36}$/);
    let body = '';
    for await (const chunk of request) body += chunk;
    assert.deepEqual(JSON.parse(body), { version: '2.0' });
    // Nothing more is sent either way: the server ends the idle connection.
    await goaway;
    await closed;
  } finally {
    session.destroy();
    await kit.app.close();
  }
});

test('without h2c options there is no second listener', async () => {
  const kit = createServerKit({ name: 'test', config, metrics: createMetrics() });
  await kit.listen();
  assert.equal(kit.h2cAddress, undefined);
  await kit.app.close();
});

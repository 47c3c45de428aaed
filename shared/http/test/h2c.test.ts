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
  try {
    const request = session.request({ ':path': '/hello' });
    const [headers] = (await once(request, 'response')) as [Record<string, unknown>];
    assert.equal(headers[':status'], 200);
    assert.match(String(headers['x-request-id']), /^[\w-]{36}$/);
    let body = '';
    for await (const chunk of request) body += chunk;
    assert.deepEqual(JSON.parse(body), { version: '2.0' });
    // Nothing more is sent either way: the server ends the idle connection.
    await once(session, 'goaway');
    await once(session, 'close');
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

import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { parseHubConfig } from '../src/config.js';
import { SseStream, startTestHub, subscribeUrl } from './helpers.js';

describe('CORS', () => {
  test('explicit origins: echoed with credentials, Last-Event-ID headers exposed', async () => {
    const hub = await startTestHub('memory', {
      MERCURE_ANONYMOUS: '1',
      MERCURE_CORS_ORIGINS: 'https://app.example,https://admin.example',
    });
    try {
      const stream = await SseStream.open(subscribeUrl(hub.url, [['match', 'https://example.com/cors']]), {
        origin: 'https://app.example',
      });
      assert.equal(stream.headers['access-control-allow-origin'], 'https://app.example');
      assert.equal(stream.headers['access-control-allow-credentials'], 'true');
      assert.match(String(stream.headers['access-control-expose-headers']), /Last-Event-ID/);
      assert.match(String(stream.headers['access-control-expose-headers']), /Mercure-Last-Event-ID/);
      stream.close();
      const other = await SseStream.open(subscribeUrl(hub.url, [['match', 'https://example.com/cors']]), {
        origin: 'https://evil.example',
      });
      assert.equal(other.headers['access-control-allow-origin'], undefined);
      other.close();
      const preflight = await fetch(hub.url, {
        method: 'OPTIONS',
        headers: {
          origin: 'https://admin.example',
          'access-control-request-method': 'POST',
          'access-control-request-headers': 'authorization',
        },
      });
      assert.equal(preflight.status, 204);
      assert.equal(preflight.headers.get('access-control-allow-origin'), 'https://admin.example');
      assert.match(preflight.headers.get('access-control-allow-methods') ?? '', /POST/);
      assert.match(preflight.headers.get('access-control-allow-headers') ?? '', /Authorization/i);
    } finally {
      await hub.close();
    }
  });

  test('`*`: any origin, never credentials', async () => {
    const hub = await startTestHub('memory', { MERCURE_ANONYMOUS: '1', MERCURE_CORS_ORIGINS: '*' });
    try {
      const stream = await SseStream.open(subscribeUrl(hub.url, [['match', 'https://example.com/cors']]), {
        origin: 'https://anything.example',
      });
      assert.equal(stream.headers['access-control-allow-origin'], '*');
      assert.equal(stream.headers['access-control-allow-credentials'], undefined);
      stream.close();
    } finally {
      await hub.close();
    }
  });

  test('`*` with credentials is refused at startup, naming the variable', () => {
    assert.throws(
      () => parseHubConfig({ MERCURE_CORS_ORIGINS: '*', MERCURE_CORS_CREDENTIALS: 'true' }),
      /MERCURE_CORS_CREDENTIALS/,
    );
  });

  test('unknown or malformed MERCURE_ settings stop the process with the variable named', () => {
    assert.throws(() => parseHubConfig({ MERCURE_HEARTBEET: '1s' }), /MERCURE_HEARTBEET/);
    assert.throws(() => parseHubConfig({ MERCURE_HISTORY_SIZE: 'lots' }), /MERCURE_HISTORY_SIZE/);
    assert.throws(() => parseHubConfig({ MERCURE_DISPATCH_TIMEOUT: 'soon' }), /MERCURE_DISPATCH_TIMEOUT/);
  });
});

describe('dev UI', () => {
  test('served in dev mode only', async () => {
    const dev = await startTestHub('memory', { MERCURE_DEV: '1' });
    const production = await startTestHub('memory', {});
    try {
      const page = await fetch(`${dev.url}/ui/`);
      assert.equal(page.status, 200);
      assert.match(page.headers.get('content-type') ?? '', /text\/html/);
      assert.match(await page.text(), /EventSource/);
      assert.equal((await fetch(`${production.url}/ui/`)).status, 404);
    } finally {
      await dev.close();
      await production.close();
    }
  });

  test('dev mode accepts anonymous subscribers and treats loopback as secure', async () => {
    const dev = await startTestHub('memory', { MERCURE_DEV: '1', TRUSTED_PROXIES: '' });
    try {
      const anonymous = await SseStream.open(subscribeUrl(dev.url, [['match', 'https://example.com/dev']]), {
        'x-forwarded-proto': 'http',
      });
      assert.equal(anonymous.status, 200);
      anonymous.close();
    } finally {
      await dev.close();
    }
  });
});

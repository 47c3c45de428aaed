import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { request } from 'node:https';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, test } from 'node:test';
import { createMetrics } from '@herald/metrics';
import { createServerKit } from '../src/index.js';

const directory = mkdtempSync(join(tmpdir(), 'herald-tls-'));
after(() => rmSync(directory, { recursive: true, force: true }));

test('with TLS_CERT_FILE and TLS_KEY_FILE the listener speaks HTTPS', async () => {
  const cert = join(directory, 'cert.pem');
  const key = join(directory, 'key.pem');
  execFileSync(
    'openssl',
    [
      'req',
      '-x509',
      '-newkey',
      'ec',
      '-pkeyopt',
      'ec_paramgen_curve:P-256',
      '-nodes',
      '-keyout',
      key,
      '-out',
      cert,
      '-days',
      '1',
      '-subj',
      '/CN=localhost',
    ],
    { stdio: 'ignore' },
  );
  const kit = createServerKit({
    name: 'tls',
    metrics: createMetrics(),
    config: {
      PORT: 0,
      HOST: '127.0.0.1',
      TLS_CERT_FILE: cert,
      TLS_KEY_FILE: key,
      TRUSTED_PROXIES: [],
      LOG_LEVEL: 'silent',
      SHUTDOWN_TIMEOUT: 1000,
    },
  });
  kit.app.get('/protocol', async (request) => ({ protocol: request.protocol }));
  const { port } = await kit.listen();
  try {
    const body = await new Promise<string>((resolve, reject) => {
      request({ host: '127.0.0.1', port, path: '/protocol', rejectUnauthorized: false }, (response) => {
        let text = '';
        response.on('data', (chunk) => (text += chunk));
        response.on('end', () => resolve(text));
      })
        .on('error', reject)
        .end();
    });
    assert.deepEqual(JSON.parse(body), { protocol: 'https' });
  } finally {
    await kit.shutdown('test over');
  }
});

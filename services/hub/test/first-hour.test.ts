/*
 * Issue #13, "the first hour", hub side: a landing page at `/`, a `?topic=` subscription that
 * points at MERCURE_LEGACY_CLAIMS, and a token over plain HTTP refused with the fix named.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { HUB_AUTH_FAILURE_REASONS, SLOW_SUBSCRIBER_REASONS } from '../src/metrics.js';
import { startTestHub } from './helpers.js';

test('GET / is a self-contained HTML page linking the dev UI, the console and the docs', async () => {
  const hub = await startTestHub('memory', { MERCURE_DEV: '1', MERCURE_SUBSCRIPTIONS: '1' });
  try {
    const response = await fetch(`${hub.origin}/`);
    assert.equal(response.status, 200);
    assert.match(response.headers.get('content-type') ?? '', /^text\/html/);
    const html = await response.text();
    assert.match(html, /<title>Herald hub<\/title>/);
    assert.match(html, /href="\/\.well-known\/mercure\/ui\/"/);
    assert.match(html, /\/console\//);
    assert.match(html, /docs\/hub\.md/);
    assert.match(html, /href="\/\.well-known\/mercure\/subscriptions"/);
    // No external asset: no script at all, no stylesheet or image from anywhere.
    assert.doesNotMatch(html, /<script|<link|<img|src=/i);
    const policy = response.headers.get('content-security-policy') ?? '';
    assert.match(policy, /default-src 'none'/);
    // Issue #22: a script on the hub's origin may still connect to the hub (test/hub/same-origin-page.test.ts).
    assert.match(policy, /connect-src 'self'(;|$)/);
    assert.equal((await fetch(`${hub.origin}/`, { method: 'HEAD' })).status, 200);
  } finally {
    await hub.close();
  }
});

test('GET / outside development mode says how to turn the dev UI on', async () => {
  const hub = await startTestHub('memory');
  try {
    const html = await (await fetch(`${hub.origin}/`)).text();
    assert.doesNotMatch(html, /href="\/\.well-known\/mercure\/ui\/"/);
    assert.match(html, /MERCURE_DEV=1/);
  } finally {
    await hub.close();
  }
});

test('?topic= without MERCURE_LEGACY_CLAIMS: 400 naming "match" and MERCURE_LEGACY_CLAIMS', async () => {
  const hub = await startTestHub('memory', { MERCURE_ANONYMOUS: '1' });
  try {
    for (const name of ['topic', 'Topic']) {
      const response = await fetch(`${hub.url}?${name}=${encodeURIComponent('https://example.com/books/1')}`);
      assert.equal(response.status, 400);
      const body = await response.text();
      assert.match(body, /"topic" query parameter is Mercure 0\.x/);
      assert.match(body, /MERCURE_LEGACY_CLAIMS=1/);
    }
    // No parameter at all: the plain message.
    const none = await fetch(hub.url);
    assert.equal(none.status, 400);
    assert.match(await none.text(), /Missing "match" \(or "topic"\)/);
  } finally {
    await hub.close();
  }
});

test('a token over plain HTTP: 400 whose message names TLS, TRUSTED_PROXIES and MERCURE_DEV', async () => {
  // No trusted proxy: the test client's loopback request is plain HTTP.
  const hub = await startTestHub('memory', { TRUSTED_PROXIES: '' });
  try {
    const response = await fetch(hub.url, {
      method: 'POST',
      headers: { authorization: 'Bearer x.y.z', 'content-type': 'application/x-www-form-urlencoded' },
      body: 'topic=https://example.com/1&data=x',
    });
    assert.equal(response.status, 400);
    const body = await response.text();
    assert.match(body, /only accepted over HTTPS/);
    assert.match(body, /TLS_CERT_FILE/);
    assert.match(body, /TRUSTED_PROXIES/);
    assert.match(body, /MERCURE_DEV=1/);
  } finally {
    await hub.close();
  }
});

test('a fresh hub exposes its labelled counters at 0 for every known reason (no "No data" panel)', async () => {
  const hub = await startTestHub('memory');
  try {
    const text = await (await fetch(`${hub.origin}/metrics`)).text();
    for (const reason of SLOW_SUBSCRIBER_REASONS) {
      assert.match(
        text,
        new RegExp(`^mercure_slow_subscriber_disconnects_total\\{[^}]*reason="${reason}"[^}]*\\} 0$`, 'm'),
      );
    }
    assert.ok(HUB_AUTH_FAILURE_REASONS.includes('expired'));
    for (const reason of HUB_AUTH_FAILURE_REASONS) {
      assert.match(
        text,
        new RegExp(`^mercure_auth_failures_total\\{[^}]*reason="${reason}"[^}]*\\} 0$`, 'm'),
      );
    }
  } finally {
    await hub.close();
  }
});

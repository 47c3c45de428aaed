/*
 * The hub's TLS port speaks HTTP/2 (MERCURE_TLS_HTTP2, default on): a browser's subscriptions to
 * the hub share one connection. Over HTTP/1.1 Chromium opens at most six connections per host, so
 * a page's seventh EventSource waits for one of the first six to close: with SSE, forever.
 */
import assert from 'node:assert/strict';
import { readFileSync, rmSync } from 'node:fs';
import { request } from 'node:https';
import { after, before, describe, test } from 'node:test';
import { createTestCertificates, type TestCertificates, waitFor } from '@herald/testkit';
import type { Browser } from 'playwright-core';
import { launchChromium } from '../chromium.js';
import { type HubProcess, publisherToken, spawnHub } from './support.js';

// The functions passed to the page run in Chromium; the test workspace compiles without the DOM lib.
declare const window: { opened: number; received: string[] };
declare class EventSource {
  constructor(url: string);
  onopen: () => void;
  onmessage: (event: { data: string }) => void;
}

const SUBSCRIPTIONS = 10;

/** A request to the hub over HTTPS/1.1, trusting the test CA: status and body. */
function httpsRequest(
  certificates: TestCertificates,
  url: string,
  options: { method?: string; headers?: Record<string, string>; body?: string } = {},
): Promise<{ status: number; body: string }> {
  const ca = readFileSync(certificates.caFile);
  return new Promise((resolve, reject) => {
    const sent = request(
      url,
      { method: options.method ?? 'GET', headers: options.headers, ca },
      (response) => {
        let body = '';
        response.on('data', (chunk) => (body += chunk));
        response.on('end', () => resolve({ status: response.statusCode ?? 0, body }));
      },
    );
    sent.on('error', reject);
    sent.end(options.body);
  });
}

describe('the hub over TLS (headless Chromium)', () => {
  let certificates: TestCertificates;
  let browser: Browser;

  before(async () => {
    certificates = createTestCertificates();
    browser = await launchChromium();
  });
  after(async () => {
    await browser?.close();
    rmSync(certificates.directory, { recursive: true, force: true });
  });

  async function startTlsHub(environment: Record<string, string>): Promise<HubProcess & { https: string }> {
    const hub = await spawnHub(
      {
        TLS_CERT_FILE: certificates.certFile,
        TLS_KEY_FILE: certificates.keyFile,
        MERCURE_ANONYMOUS: '1',
        ...environment,
      },
      { waitReady: false },
    );
    const https = `https://localhost:${hub.port}`;
    await waitFor(
      async () =>
        (await httpsRequest(certificates, `${https}/readyz`).catch(() => undefined))?.status === 200,
      {
        what: 'the TLS hub to be ready',
        timeoutMs: 20_000,
      },
    );
    return { ...hub, https };
  }

  /**
   * Opens a page of the hub's origin holding SUBSCRIPTIONS EventSources to one topic; resolves
   * with the protocol Chromium used for each subscribe, once all are open.
   */
  async function openSubscriptions(hubOrigin: string, topic: string) {
    const context = await browser.newContext({ ignoreHTTPSErrors: true });
    const page = await context.newPage();
    const cdp = await context.newCDPSession(page);
    const protocols: string[] = [];
    cdp.on('Network.responseReceived', (event: { response: { url: string; protocol?: string } }) => {
      if (event.response.url.includes('/.well-known/mercure')) protocols.push(event.response.protocol ?? '?');
    });
    await cdp.send('Network.enable');
    await page.goto(`${hubOrigin}/healthz`);
    await page.evaluate(
      ({ topic, count }) => {
        window.opened = 0;
        window.received = [];
        for (let index = 0; index < count; index++) {
          const source = new EventSource(`/.well-known/mercure?match=${encodeURIComponent(topic)}`);
          source.onopen = () => {
            window.opened += 1;
          };
          source.onmessage = (event) => {
            window.received.push(event.data);
          };
        }
      },
      { topic, count: SUBSCRIPTIONS },
    );
    return { context, page, protocols };
  }

  test(`${SUBSCRIPTIONS} subscriptions of one page share an HTTP/2 connection and all receive an update`, async () => {
    const hub = await startTlsHub({});
    const topic = 'https://example.com/tls/h2';
    const { context, page, protocols } = await openSubscriptions(hub.https, topic);
    try {
      await page.waitForFunction((count) => window.opened === count, SUBSCRIPTIONS);
      assert.deepEqual(protocols, Array(SUBSCRIPTIONS).fill('h2'));
      const published = await httpsRequest(certificates, `${hub.https}/.well-known/mercure`, {
        method: 'POST',
        headers: {
          authorization: `Bearer ${publisherToken()}`,
          'content-type': 'application/x-www-form-urlencoded',
        },
        body: new URLSearchParams({ topic, data: 'to every tab' }).toString(),
      });
      assert.equal(published.status, 200, published.body);
      await page.waitForFunction((count) => window.received.length === count, SUBSCRIPTIONS);
      assert.deepEqual(await page.evaluate(() => window.received), Array(SUBSCRIPTIONS).fill('to every tab'));
    } finally {
      await context.close();
      await hub.stop();
    }
  });

  test('MERCURE_TLS_HTTP2=0: the subscriptions go over HTTP/1.1', async () => {
    const hub = await startTlsHub({ MERCURE_TLS_HTTP2: '0' });
    const { context, page, protocols } = await openSubscriptions(hub.https, 'https://example.com/tls/http1');
    try {
      await page.waitForFunction(() => window.opened === 6);
      assert.ok(protocols.length >= 6);
      assert.ok(
        protocols.every((protocol) => protocol === 'http/1.1'),
        protocols.join(),
      );
    } finally {
      await context.close();
      await hub.stop();
    }
  });
});

import assert from 'node:assert/strict';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { after, before, describe, test } from 'node:test';
import { freePort } from '@herald/testkit';
import type { Browser } from 'playwright-core';
import { launchChromium } from '../chromium.js';
import { type HubProcess, publisherToken, publishOk, spawnHub, subscriberToken } from './support.js';

// The functions passed to the page run in Chromium; the test workspace compiles without the DOM lib.
declare const window: { opened: boolean; cookieVisible: boolean; received: { id: string; data: string }[] };
declare const document: {
  getElementById(id: string): { textContent: string | null } | null;
  querySelectorAll(selector: string): Iterable<{ textContent: string | null }>;
};

describe('browsers (headless Chromium)', () => {
  let browser: Browser;
  let hub: HubProcess;
  let page: Server;
  let pageOrigin: string;
  let hubOrigin: string;
  const topic = 'https://example.com/browser/private';

  before(async () => {
    // The page is served from another origin (another port) of the same site (localhost): the
    // hub's cookie, set at discovery by the page's server, rides along on the cross-origin
    // EventSource only with withCredentials and the hub's credentialed CORS answer.
    const pagePort = await freePort();
    pageOrigin = `http://localhost:${pagePort}`;
    // Dev mode: a loopback peer counts as a secure context, as it does for the browser.
    hub = await spawnHub({ MERCURE_DEV: '1', MERCURE_CORS_ORIGINS: pageOrigin, HOST: '127.0.0.1' });
    hubOrigin = `http://localhost:${hub.port}`;
    const token = subscriberToken([{ match: topic }]);
    page = createServer((request, response) => {
      if (request.url !== '/') {
        response.writeHead(404).end();
        return;
      }
      response.writeHead(200, {
        'content-type': 'text/html; charset=utf-8',
        // Discovery: the application sets the hub cookie (HttpOnly, Secure, SameSite=Strict,
        // limited to the hub path). Chromium accepts Secure cookies on http://localhost.
        'set-cookie': `mercureAuthorization=${token}; Path=/.well-known/mercure; HttpOnly; Secure; SameSite=Strict`,
        link: `<${hubOrigin}/.well-known/mercure>; rel="mercure"`,
      });
      response.end(`<!doctype html><title>app</title><script>
        window.received = [];
        window.opened = false;
        const url = new URL('${hubOrigin}/.well-known/mercure');
        url.searchParams.append('match', '${topic}');
        const source = new EventSource(url, { withCredentials: true });
        source.onopen = () => { window.opened = true; };
        source.onmessage = (event) => { window.received.push({ id: event.lastEventId, data: event.data }); };
        window.cookieVisible = document.cookie.includes('mercureAuthorization');
      </script>`);
    });
    await new Promise<void>((resolve) => page.listen(pagePort, '127.0.0.1', resolve));
    assert.equal((page.address() as AddressInfo).port, pagePort);
    browser = await launchChromium();
  });

  after(async () => {
    await browser?.close();
    await new Promise((resolve) => page?.close(resolve));
    await hub?.stop();
  });

  test('a cross-origin EventSource with withCredentials and an HttpOnly cookie receives a private update', async () => {
    const context = await browser.newContext();
    const tab = await context.newPage();
    await tab.goto(`${pageOrigin}/`);
    await tab.waitForFunction(() => window.opened === true);
    assert.equal(await tab.evaluate(() => window.cookieVisible), false, 'HttpOnly');
    const id = await publishOk(
      hub.url,
      { topic, data: 'for the cookie holder', private: 'on' },
      publisherToken(),
    );
    await tab.waitForFunction((expected) => window.received.some((event) => event.id === expected), id);
    const received = await tab.evaluate(() => window.received);
    assert.deepEqual(received, [{ id, data: 'for the cookie holder' }]);
    await context.close();
  });

  test('the dev UI subscribes, publishes and shows the event', async () => {
    const context = await browser.newContext();
    const tab = await context.newPage();
    const violations: string[] = [];
    tab.on('console', (message) => {
      if (/Content Security Policy/i.test(message.text())) violations.push(message.text());
    });
    await tab.goto(`${hubOrigin}/.well-known/mercure/ui/`);
    await tab.click('#subscribe');
    await tab.waitForFunction(() => document.getElementById('subscribe-status')?.textContent === 'connected');
    await tab.fill('#publish-data', 'hello from the dev UI');
    await tab.fill('#publish-token', publisherToken());
    await tab.click('#publish');
    await tab.waitForFunction(() =>
      document.getElementById('publish-status')?.textContent?.startsWith('200 urn:uuid:'),
    );
    const status = (await tab.textContent('#publish-status')) ?? '';
    const id = status.slice('200 '.length);
    await tab.waitForFunction(
      (expected) =>
        [...document.querySelectorAll('#events li')].some((item) => item.textContent?.includes(expected)),
      id,
    );
    const shown = await tab.textContent('#events li');
    assert.match(shown ?? '', /hello from the dev UI/);
    // Issue #22: the dev UI's Content-Security-Policy lets its own EventSource and fetch through.
    assert.deepEqual(violations, []);
    await context.close();
  });
});

/*
 * Issue #22: the official Mercure conformance suite opens the hub's own origin (`page.goto("/")`)
 * and, from that page, subscribes with EventSource and publishes with fetch. The home page's
 * Content-Security-Policy must let a page of the hub's origin connect to the hub; these tests do
 * what the suite does, on the in-process backend and across two nodes on Redis.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { stopTestRedis, testRedisEnvironment, uniquePrefix } from '@herald/testkit';
import type { Browser } from 'playwright-core';
import { launchChromium } from '../chromium.js';
import { type HubProcess, publisherToken, spawnHub } from './support.js';

// The functions passed to the page run in Chromium; the test workspace compiles without the DOM lib.
declare const window: {
  received: { id: string; data: string }[];
  opened: boolean;
  errors: string[];
  EventSource: new (
    url: string,
  ) => {
    onopen: (() => void) | null;
    onmessage: ((event: { lastEventId: string; data: string }) => void) | null;
    onerror: (() => void) | null;
  };
};
declare const location: { origin: string };

const TOPIC = 'https://example.com/same-origin/1';

/**
 * Opens `subscribeOrigin/` in a fresh tab, subscribes from that page with EventSource, publishes
 * from the page opened on `publishOrigin/` with fetch, and returns what the subscribing page
 * received and the Content-Security-Policy violations the browser reported.
 */
async function roundTrip(
  browser: Browser,
  subscribeOrigin: string,
  publishOrigin: string,
): Promise<{ published: string; received: { id: string; data: string }[]; violations: string[] }> {
  const context = await browser.newContext();
  try {
    const violations: string[] = [];
    const subscriber = await context.newPage();
    const publisher = subscribeOrigin === publishOrigin ? subscriber : await context.newPage();
    for (const tab of new Set([subscriber, publisher])) {
      tab.on('console', (message) => {
        if (/Content Security Policy/i.test(message.text())) violations.push(message.text());
      });
    }
    await subscriber.goto(`${subscribeOrigin}/`);
    if (publisher !== subscriber) await publisher.goto(`${publishOrigin}/`);
    await subscriber.evaluate((topic) => {
      window.received = [];
      window.opened = false;
      window.errors = [];
      const url = new URL('/.well-known/mercure', location.origin);
      url.searchParams.append('match', topic);
      const source = new window.EventSource(url.toString());
      source.onopen = () => {
        window.opened = true;
      };
      source.onerror = () => {
        window.errors.push('error');
      };
      source.onmessage = (event) => {
        window.received.push({ id: event.lastEventId, data: event.data });
      };
    }, TOPIC);
    // A blocked EventSource never opens: it reports an error at once, so wait for either.
    await subscriber.waitForFunction(() => window.opened || window.errors.length > 0);
    const opened = await subscriber.evaluate(() => window.opened);
    if (!opened) return { published: '', received: [], violations };
    const published = await publisher.evaluate(
      async ({ topic, token }) => {
        try {
          const response = await fetch('/.well-known/mercure', {
            method: 'POST',
            headers: {
              authorization: `Bearer ${token}`,
              'content-type': 'application/x-www-form-urlencoded',
            },
            body: new URLSearchParams({ topic, data: 'from the hub origin' }),
          });
          return response.ok ? await response.text() : `status ${response.status}: ${await response.text()}`;
        } catch (error) {
          return `fetch failed: ${String(error)}`;
        }
      },
      { topic: TOPIC, token: publisherToken() },
    );
    assert.match(published, /^urn:uuid:/, `the page's fetch publish: ${published}`);
    await subscriber.waitForFunction((id) => window.received.some((event) => event.id === id), published);
    return { published, received: await subscriber.evaluate(() => window.received), violations };
  } finally {
    await context.close();
  }
}

describe("a page on the hub's origin subscribes and publishes (the conformance suite's layout)", () => {
  let browser: Browser;

  before(async () => {
    browser = await launchChromium();
  });
  after(async () => {
    await browser?.close();
  });

  test('in-process backend: EventSource and fetch from the home page reach the hub', async () => {
    const hub = await spawnHub({ MERCURE_DEV: '1', MERCURE_ANONYMOUS: '1', MERCURE_HEARTBEAT: '0' });
    try {
      const { published, received, violations } = await roundTrip(browser, hub.origin, hub.origin);
      assert.deepEqual(violations, []);
      assert.deepEqual(received, [{ id: published, data: 'from the hub origin' }]);
    } finally {
      await hub.stop();
    }
  });

  describe('Redis, two nodes', () => {
    let nodeA: HubProcess;
    let nodeB: HubProcess;
    before(async () => {
      const environment = {
        ...(await testRedisEnvironment()),
        MERCURE_REDIS_PREFIX: uniquePrefix('same-origin'),
        // Development mode, as the conformance suite runs: a token is accepted over loopback HTTP.
        MERCURE_DEV: '1',
        MERCURE_ANONYMOUS: '1',
        MERCURE_HEARTBEAT: '0',
      };
      [nodeA, nodeB] = await Promise.all([spawnHub(environment), spawnHub(environment)]);
    });
    after(async () => {
      await Promise.all([nodeA?.stop(), nodeB?.stop()]);
      await stopTestRedis();
    });

    test("subscribed from node A's home page, published from node B's: the update arrives", async () => {
      const { published, received, violations } = await roundTrip(browser, nodeA.origin, nodeB.origin);
      assert.deepEqual(violations, []);
      assert.deepEqual(received, [{ id: published, data: 'from the hub origin' }]);
    });

    test("subscribed and published from node B's home page: the update arrives", async () => {
      const { published, received, violations } = await roundTrip(browser, nodeB.origin, nodeB.origin);
      assert.deepEqual(violations, []);
      assert.deepEqual(received, [{ id: published, data: 'from the hub origin' }]);
    });
  });
});

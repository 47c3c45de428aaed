/*
 * The console and the outbox (issue #25; docs/broker-outbox.md) in headless Chromium: a queue's
 * bridge edited through configure (the broker's 400 shown as the error), and the System view's
 * outbox relay panel with an outbox lagging and one holding an update the hub refused. The hub
 * is a stand-in HTTP server that answers 503 (retried: the intents wait and age) or 400 (refused
 * for good) by topic, so both states are reached without waiting on a real hub's failure.
 */
import assert from 'node:assert/strict';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { after, before, describe, test } from 'node:test';
import type { Broker } from '@herald/broker';
import { waitFor } from '@herald/testkit';
import type { APIResponse, Browser, Page, Route } from 'playwright-core';
import {
  type Api,
  adminApi,
  launchChromium,
  signIn,
  startConsoleBroker,
  token,
  waitForText,
} from './support.js';

const SLOW = 'outbox.slow';
const REFUSED = 'outbox.refused';

/** A hub stand-in: a topic under /refused/ answers 400 (refused for good), any other 503. */
async function startStandInHub(): Promise<{ server: Server; url: string; publishes: string[] }> {
  const publishes: string[] = [];
  const server = createServer((request, response) => {
    let body = '';
    request.on('data', (chunk: Buffer) => {
      body += chunk.toString();
    });
    request.on('end', () => {
      const topics = new URLSearchParams(body).getAll('topic');
      publishes.push(...topics);
      const refused = topics.some((topic) => topic.includes('/refused/'));
      response.writeHead(refused ? 400 : 503, { 'content-type': 'text/plain' });
      response.end(refused ? 'topic refused by the stand-in' : 'stand-in hub unavailable');
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return { server, url: `http://127.0.0.1:${port}/.well-known/mercure`, publishes };
}

describe('console: the queue bridge and the outbox relay (admin, headless Chromium)', () => {
  let hub: Awaited<ReturnType<typeof startStandInHub>>;
  let broker: Broker;
  let browser: Browser;
  let page: Page;
  let api: Api;

  before(async () => {
    hub = await startStandInHub();
    broker = await startConsoleBroker({
      BROKER_HUB_URL: hub.url,
      BROKER_HUB_JWT_KEY: 'console-outbox-publisher-key-of-32-bytes!',
    });
    api = await adminApi(broker);
    for (const queue of [SLOW, REFUSED])
      assert.equal(
        (await api('POST', '/api/v1/configure', { queue, options: { retryLimit: 1 } })).status,
        200,
      );
    browser = await launchChromium();
    page = await (await browser.newContext({ viewport: { width: 1280, height: 900 } })).newPage();
    await signIn(page, broker, await token('admin'));
    await waitForText(page.getByTestId('role'), 'admin');
  });

  after(async () => {
    await browser?.close();
    await broker?.close();
    await new Promise((resolve) => hub?.server.close(resolve));
  });

  /** Saves the options form as it stands, confirmed; resolves to the result line's text. */
  async function save(): Promise<string> {
    await page.getByTestId('save-options').click();
    await page.getByTestId('confirm-ok').click();
    const result = page.getByTestId('confirm-result');
    await result.waitFor();
    const text = (await result.textContent()) ?? '';
    await page.getByTestId('confirm-close').click();
    return text;
  }

  test("a queue's bridge set through configure: topic template, events, private", async () => {
    await page.goto(`${broker.url}/console/#/queues/${SLOW}`);
    const form = page.getByTestId('bridge-form');
    await form.locator('input[name=bridgeTopic]').fill('https://example.com/slow/{queue}/{partition}');
    await form.locator('select[name=bridgeOn]').selectOption('both');
    await form.locator('input[name=bridgePrivate]').check();
    await page.getByTestId('save-options').click();
    const dialog = page.getByRole('dialog');
    await waitForText(dialog, '"bridgeTopic": "https://example.com/slow/{queue}/{partition}"');
    await waitForText(dialog, '"bridgeOn": "both"');
    await waitForText(dialog, '"bridgePrivate": true');
    await page.getByTestId('confirm-ok').click();
    await waitForText(page.getByTestId('confirm-result'), 'Configured.');
    await page.getByTestId('confirm-close').click();
    // The form shows what the broker answered, and the broker holds it (an empty configure
    // answers every option and changes none).
    assert.equal(
      await form.locator('input[name=bridgeTopic]').inputValue(),
      'https://example.com/slow/{queue}/{partition}',
    );
    assert.equal(await form.locator('select[name=bridgeOn]').inputValue(), 'both');
    const options = (await api('POST', '/api/v1/configure', { queue: SLOW, options: {} })).body.options;
    assert.deepEqual(
      [options.bridgeTopic, options.bridgeOn, options.bridgePrivate, options.retryLimit],
      ['https://example.com/slow/{queue}/{partition}', 'both', true, 1],
    );
  });

  test('an answer the page asked for before a save never shows over the save', async () => {
    // The page polls its queue every 3 s. One poll is answered by the broker before the save and
    // handed to the page after it, as a slow network would: the page must keep the saved value.
    const detail = `**/api/v1/status/queues/${encodeURIComponent(SLOW)}`;
    await page.goto(`${broker.url}/console/#/queues/${SLOW}`);
    const retryLimit = page.getByTestId('options-form').locator('input[name=retryLimit]');
    await page.waitForFunction(
      "document.querySelector('[data-testid=options-form] input[name=retryLimit]')?.value === '1'",
    );
    let stale: { route: Route; response: APIResponse } | undefined;
    await page.route(detail, async (route) => {
      if (stale) return route.continue();
      stale = { route, response: await route.fetch() };
    });
    try {
      await retryLimit.fill('3');
      const held = await waitFor(() => stale, { timeoutMs: 10_000, what: "the page's next poll" });
      assert.equal(await save(), 'Configured.');
      assert.equal(await retryLimit.inputValue(), '3', 'the save shows what the broker now holds');
      const late = page.waitForResponse((response) => response.request() === held.route.request());
      await held.route.fulfill({ response: held.response });
      await (await late).finished();
      // What the answer's handler renders is on screen once the page has drawn twice more.
      await page.evaluate(
        'new Promise((resolve) => requestAnimationFrame(() => requestAnimationFrame(resolve)))',
      );
      assert.equal(await retryLimit.inputValue(), '3', 'the older answer is not shown over the save');
    } finally {
      await page.unroute(detail);
    }
  });

  test("a queue's page never shows the previous queue's options: its late answer is dropped", async () => {
    // The previous queue's answer is held until the next queue's page has loaded, then let go.
    const slowDetail = `**/api/v1/status/queues/${encodeURIComponent(SLOW)}`;
    let release = () => {};
    const held = new Promise<void>((resolve) => {
      release = resolve;
    });
    await page.route(slowDetail, async (route) => {
      await held;
      await route.continue();
    });
    try {
      await page.goto(`${broker.url}/console/#/queues`);
      const asked = page.waitForRequest((request) =>
        request.url().endsWith(`/api/v1/status/queues/${encodeURIComponent(SLOW)}`),
      );
      await page.goto(`${broker.url}/console/#/queues/${SLOW}`);
      await asked;
      const late = page.waitForResponse((response) =>
        response.url().endsWith(`/api/v1/status/queues/${encodeURIComponent(SLOW)}`),
      );
      await page.goto(`${broker.url}/console/#/queues/${REFUSED}`);
      const topic = page.getByTestId('bridge-form').locator('input[name=bridgeTopic]');
      await topic.waitFor();
      assert.equal(await topic.inputValue(), '');
      release();
      await (await late).finished();
      // What the answer's handler renders is on screen once the page has drawn twice more.
      await page.evaluate(
        'new Promise((resolve) => requestAnimationFrame(() => requestAnimationFrame(resolve)))',
      );
      assert.equal(await page.getByTestId('queue-name').textContent(), REFUSED);
      assert.equal(await topic.inputValue(), '', "the previous queue's late answer is not shown");
    } finally {
      release();
      await page.unroute(slowDetail);
    }
  });

  test("the broker's 400 is shown as the error, and nothing changes", async () => {
    await page.goto(`${broker.url}/console/#/queues/${REFUSED}`);
    const topic = page.getByTestId('bridge-form').locator('input[name=bridgeTopic]');
    // The form shown is this queue's (the previous page's bridge topic is not empty).
    await page.waitForFunction(
      "document.querySelector('[data-testid=bridge-form] input[name=bridgeTopic]')?.value === ''",
    );
    await topic.fill('https://example.com/refused/{nope}');
    assert.match(await save(), /options\.bridgeTopic names \{nope\}/);
    const options = (await api('POST', '/api/v1/configure', { queue: REFUSED, options: {} })).body.options;
    assert.equal(options.bridgeTopic, '');
    // Corrected, it saves.
    await topic.fill('https://example.com/refused/{queue}');
    assert.equal(await save(), 'Configured.');
  });

  test('System: the outbox relay with a lagging outbox and an update the hub refused', async () => {
    const pushed = await api('POST', '/api/v1/push', {
      items: [
        { queue: SLOW, partition: 'p1', transactionId: 'slow-1', payload: { n: 1 } },
        { queue: REFUSED, partition: 'p1', transactionId: 'refused-1', payload: { n: 1 } },
      ],
    });
    assert.equal(pushed.status, 201);
    await page.goto(`${broker.url}/console/#/system`);
    await waitForText(page.getByTestId('outbox-relaying'), 'This node relays the outboxes');
    const table = page.getByTestId('outbox-table');
    await waitForText(table.locator('tr', { hasText: REFUSED }), /1 — refused by the hub/);
    // The stand-in answers 503 to the other: its intent waits and ages past the mark.
    await waitForText(table.locator('tr', { hasText: SLOW }), 's — lagging');
    assert.ok(hub.publishes.includes('https://example.com/slow/outbox.slow/p1'), hub.publishes.join());
    // Needing a look first: the refused outbox, then the lagging one.
    assert.deepEqual(await table.locator('tbody tr td:first-child').allTextContents(), [REFUSED, SLOW]);
    const status = (await api('GET', '/api/v1/outbox')).body;
    const slow = status.outboxes.find((row: { queue: string }) => row.queue === SLOW);
    assert.equal(slow.pending, 1);
    assert.ok(slow.lagSeconds > 5, String(slow.lagSeconds));
  });
});

/*
 * The console with a read-only token (issue #13: "read-only tokens see no buttons that would
 * 403"): every view still renders the broker's data, and no write control is on the page.
 * The same views with an admin token show those controls (console.test.ts uses each of them).
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import type { Broker } from '@herald/broker';
import type { Browser, Page } from 'playwright-core';
import {
  type Api,
  adminApi,
  launchChromium,
  signIn,
  startConsoleBroker,
  token,
  waitForText,
} from './support.js';

const QUEUE = 'reports.daily';

/** Every control of the console that changes the broker, by its test id or label. */
const WRITE_CONTROLS = [
  '[data-testid=save-options]',
  '[data-testid=requeue-selected]',
  '[data-testid=requeue-all]',
  '[data-testid^=seek-]',
  '[data-testid^=toggle-]',
  'input[type=checkbox][aria-label^=select]',
];

describe('console (read-only token, headless Chromium)', () => {
  let broker: Broker;
  let browser: Browser;
  let page: Page;
  let api: Api;

  before(async () => {
    broker = await startConsoleBroker();
    api = await adminApi(broker);
    assert.equal(
      (await api('POST', '/api/v1/configure', { queue: QUEUE, options: { retryLimit: 0 } })).status,
      200,
    );
    const items = [1, 2].map((n) => ({
      queue: QUEUE,
      partition: 'p',
      transactionId: `r-${n}`,
      payload: { n },
    }));
    assert.equal((await api('POST', '/api/v1/push', { items })).status, 201);
    const popped = await api('GET', `/api/v1/pop/queue/${QUEUE}?batch=1&consumerGroup=audit`);
    const message = popped.body.messages[0];
    await api('POST', '/api/v1/ack', {
      transactionId: message.transactionId,
      partitionId: message.partitionId,
      leaseId: message.leaseId,
      consumerGroup: 'audit',
      status: 'dlq',
      error: 'report failed',
    });
    await api('POST', '/api/v1/stats/refresh');
    browser = await launchChromium();
    page = await browser.newPage();
    await signIn(page, broker, await token('read-only'));
    await waitForText(page.getByTestId('role'), 'read-only');
  });

  after(async () => {
    await browser?.close();
    await broker?.close();
  });

  async function assertNoWriteControl(view: string): Promise<void> {
    for (const selector of WRITE_CONTROLS) {
      assert.equal(
        await page.locator(selector).count(),
        0,
        `${view}: ${selector} is shown to a read-only token`,
      );
    }
  }

  test('a token the broker refuses is asked for again, naming the problem', async () => {
    const other = await browser.newPage();
    await signIn(other, broker, 'not-a-token');
    await waitForText(other.locator('.token-form'), 'refused this token');
    await other.close();
  });

  test('Overview renders; admin-only numbers say so instead of failing', async () => {
    await page.goto(`${broker.url}/console/#/overview`);
    await waitForText(page.getByTestId('stat-queues'), /^1queues/);
    await waitForText(page.getByTestId('stat-nodes'), /^—nodes seen/);
    await assertNoWriteControl('overview');
  });

  test('the queue page shows its data and its options read-only', async () => {
    await page.goto(`${broker.url}/console/#/queues/${QUEUE}`);
    await waitForText(page.getByTestId('partitions-table'), 'p');
    await waitForText(page.getByTestId('messages-table'), 'r-2');
    await waitForText(page.locator('.card', { hasText: 'Options' }), 'this token may not configure queues');
    assert.equal(await page.locator('input[name=retryLimit]').getAttribute('readonly'), '');
    assert.equal(await page.locator('input[name=bridgeTopic]').getAttribute('readonly'), '');
    assert.equal(await page.locator('select[name=bridgeOn]').isDisabled(), true);
    assert.equal(await page.locator('input[name=bridgePrivate]').isDisabled(), true);
    await assertNoWriteControl('queue page');
  });

  test('Consumer groups and Dead letters render without seek or requeue controls', async () => {
    await page.goto(`${broker.url}/console/#/groups`);
    await waitForText(page.getByTestId('groups-table'), 'audit');
    await assertNoWriteControl('groups');
    await page.goto(`${broker.url}/console/#/dlq?queue=${QUEUE}`);
    await waitForText(page.getByTestId('dlq-table'), 'report failed');
    await assertNoWriteControl('dead letters');
  });

  test('System shows this node and the outbox relay but neither toggles nor the node list (admin routes)', async () => {
    await page.goto(`${broker.url}/console/#/system`);
    await waitForText(page.getByTestId('backend'), 'redis');
    await waitForText(page.locator('main'), 'An admin token is needed');
    assert.equal(await page.getByTestId('nodes-table').count(), 0);
    // The outbox status is a read-only route: shown to this token too.
    await waitForText(page.getByTestId('outbox-relaying'), 'no hub configured on this node (BROKER_HUB_URL)');
    await assertNoWriteControl('system');
  });
});

/*
 * The operations console (issue #13, section 1) in headless Chromium against a real broker and
 * hub on Redis, signed in with an admin token: every view renders the data pushed here, and
 * configure, requeue (selected and all), seek (to the end and to a time) and the maintenance
 * toggles change the broker, checked through its API afterwards.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import type { Broker } from '@herald/broker';
import { testRedisUrl, uniquePrefix } from '@herald/testkit';
import type { Browser, Page } from 'playwright-core';
import { type HubProcess, publisherToken, publishOk, spawnHub, subscriberToken } from '../hub/support.js';
import {
  type Api,
  adminApi,
  launchChromium,
  signIn,
  startConsoleBroker,
  token,
  waitForText,
} from './support.js';

const QUEUE = 'orders.email';
/** Where to save the README's screenshots (docs/img), when set: `HERALD_CONSOLE_SCREENSHOTS=docs/img`. */
const SCREENSHOTS = process.env.HERALD_CONSOLE_SCREENSHOTS;
const OTHER = 'billing.invoice';
const TOPIC = 'https://example.com/console/books/1';

describe('console (admin, headless Chromium)', () => {
  let broker: Broker;
  let hub: HubProcess;
  let browser: Browser;
  let page: Page;
  let api: Api;
  let pushedAt: string;
  const cspViolations: string[] = [];

  async function screenshot(name: string): Promise<void> {
    if (SCREENSHOTS) await page.screenshot({ path: `${SCREENSHOTS}/console-${name}.png`, fullPage: true });
  }

  /** Pops one message of QUEUE (queue mode) and dead-letters it with `error`. */
  async function deadLetter(error: string): Promise<void> {
    const popped = await api('GET', `/api/v1/pop/queue/${QUEUE}?batch=1`);
    assert.equal(popped.status, 200);
    const message = popped.body.messages[0];
    const acked = await api('POST', '/api/v1/ack', {
      transactionId: message.transactionId,
      partitionId: message.partitionId,
      leaseId: message.leaseId,
      status: 'dlq',
      error,
    });
    assert.equal(acked.body[0].dlq, true);
  }

  before(async () => {
    broker = await startConsoleBroker();
    api = await adminApi(broker);
    hub = await spawnHub({
      MERCURE_DEV: '1',
      MERCURE_SUBSCRIPTIONS: '1',
      MERCURE_CORS_ORIGINS: broker.url,
      REDIS_URL: await testRedisUrl(),
      MERCURE_REDIS_PREFIX: uniquePrefix('console-hub'),
      // Far above what the views open: counted, never refused (the limits card reads the counts).
      MERCURE_LIMIT_SUBSCRIPTIONS: '50',
    });
    assert.equal(
      (
        await api('POST', '/api/v1/configure', {
          queue: QUEUE,
          options: { leaseTime: 30, retryLimit: 3, retryDelay: 0 },
        })
      ).status,
      200,
    );
    pushedAt = new Date(Date.now() - 1000).toISOString();
    const items = [
      ...['customer-1', 'customer-2', 'customer-3'].flatMap((partition) =>
        [1, 2].map((n) => ({
          queue: QUEUE,
          partition,
          transactionId: `${partition}-${n}`,
          payload: { n, partition },
        })),
      ),
      { queue: OTHER, transactionId: 'invoice-1', payload: { amount: 12 } },
    ];
    assert.equal((await api('POST', '/api/v1/push', { items })).status, 201);
    // Two dead letters (queue mode) and a consumer group `audit` that has read nothing yet.
    await deadLetter('smtp timeout');
    await deadLetter('mailbox full');
    assert.equal(
      (
        await api(
          'GET',
          `/api/v1/pop/queue/${QUEUE}/partition/customer-1?consumerGroup=audit&batch=1&subscriptionMode=all`,
        )
      ).status,
      200,
    );
    assert.equal(
      (
        await api('POST', '/api/v1/traces', {
          partitionId: (await api('GET', `/api/v1/messages?queue=${QUEUE}`)).body.messages[0].partitionId,
          transactionId: 'customer-1-1',
          traceName: 'order-42',
          eventType: 'info',
          data: { step: 'email rendered' },
        })
      ).status,
      201,
    );
    await api('POST', '/api/v1/stats/refresh');
    browser = await launchChromium();
    page = await (await browser.newContext({ viewport: { width: 1280, height: 900 } })).newPage();
    page.on('console', (message) => {
      if (/Content Security Policy/i.test(message.text())) cspViolations.push(message.text());
    });
    await signIn(page, broker, await token('admin'));
    await waitForText(page.getByTestId('role'), 'admin');
  });

  after(async () => {
    await browser?.close();
    await hub?.stop();
    await broker?.close();
  });

  test('Overview: queue and dead-letter totals, oldest pending age, nodes, maintenance flags, rates chart', async () => {
    await page.goto(`${broker.url}/console/#/overview`);
    await waitForText(page.getByTestId('stat-queues'), /^2queues/);
    await waitForText(page.getByTestId('stat-dlq'), /^2dead letters/);
    await waitForText(page.getByTestId('stat-nodes'), /^1nodes seen/);
    await waitForText(page.getByTestId('stat-maintenance'), /^offmaintenance/);
    await waitForText(page.getByTestId('stat-oldest'), /\d+ s/);
    // The chart draws what the console sampled: a push now shows up as a rate.
    await api('POST', '/api/v1/push', { items: [{ queue: OTHER, transactionId: 'invoice-2', payload: {} }] });
    await waitForText(page.getByTestId('rates-now'), /[1-9][\d.]* push\/s/);
    assert.equal(await page.getByTestId('rates-chart').locator('canvas').count(), 1);
    if (SCREENSHOTS) {
      // A few samples of traffic (push, pop, ack), so the chart has a shape to show.
      for (let round = 1; round <= 6; round++) {
        const points = Number(await page.getByTestId('rates-now').getAttribute('data-points'));
        const items = Array.from({ length: round * 3 }, (_, n) => ({
          queue: OTHER,
          transactionId: `s-${round}-${n}`,
          payload: {},
        }));
        await api('POST', '/api/v1/push', { items });
        const popped = await api('GET', `/api/v1/pop/queue/${OTHER}?batch=${round * 2}`);
        await api('POST', '/api/v1/ack/batch', {
          acknowledgments: popped.body.messages.map(
            (m: { transactionId: string; partitionId: string; leaseId: string }) => ({
              transactionId: m.transactionId,
              partitionId: m.partitionId,
              leaseId: m.leaseId,
              status: 'completed',
            }),
          ),
        });
        await page.locator(`[data-testid=rates-now]:not([data-points="${points}"])`).waitFor();
      }
    }
    await screenshot('overview');
  });

  test('Queues: the list with depth and partitions; a queue page with partitions, groups, messages', async () => {
    await page.goto(`${broker.url}/console/#/queues`);
    const row = page.getByTestId('queues-table').locator('tr', { hasText: QUEUE });
    await waitForText(row, /orders \/ email\s*3/);
    await row.getByRole('link', { name: QUEUE }).click();
    assert.match(page.url(), /#\/queues\/orders\.email$/);
    const partitions = page.getByTestId('partitions-table');
    for (const partition of ['customer-1', 'customer-2', 'customer-3'])
      await waitForText(partitions, partition);
    await waitForText(page.getByTestId('queue-groups-table').locator('tr', { hasText: 'audit' }), 'audit');
    const messages = page.getByTestId('messages-table');
    await waitForText(messages.locator('tr', { hasText: 'customer-1-1' }), 'dead_letter');
    await messages.getByRole('button', { name: 'customer-2-2' }).click();
    await waitForText(page.getByTestId('message-inspect'), '"partition": "customer-2"');
    await screenshot('queue');
  });

  test('Queues: options edited through configure', async () => {
    await page.goto(`${broker.url}/console/#/queues/${QUEUE}`);
    const retryLimit = page.getByTestId('options-form').locator('input[name=retryLimit]');
    await retryLimit.waitFor();
    assert.equal(await retryLimit.inputValue(), '3');
    await retryLimit.fill('7');
    await page.getByTestId('save-options').click();
    await waitForText(page.getByRole('dialog'), '"retryLimit": 7');
    await page.getByTestId('confirm-ok').click();
    await waitForText(page.getByTestId('confirm-result'), 'Configured.');
    await page.getByTestId('confirm-close').click();
    const detail = await api('GET', `/api/v1/status/queues/${QUEUE}`);
    assert.equal(detail.body.queue.config.retryLimit, 7);
    assert.equal(detail.body.queue.config.leaseTime, 30, 'options not edited are kept');
  });

  test('Dead letters: browse, filter, inspect, requeue selected then all, with the result shown', async () => {
    await page.goto(`${broker.url}/console/#/dlq?queue=${QUEUE}`);
    const table = page.getByTestId('dlq-table');
    await waitForText(table, 'smtp timeout');
    await waitForText(table, 'mailbox full');
    await page.getByPlaceholder('Filter: transaction, error, partition').fill('smtp');
    await waitForText(page.getByTestId('dlq-total'), '1 shown');
    const smtp = table.locator('tr', { hasText: 'smtp timeout' });
    await smtp.getByRole('button').click();
    await waitForText(page.getByTestId('dlq-inspect'), 'smtp timeout');
    await waitForText(page.getByTestId('dlq-inspect'), '"partition":');
    await screenshot('dead-letters');

    await smtp.getByRole('checkbox').check();
    await page.getByTestId('requeue-selected').click();
    await page.getByTestId('confirm-ok').click();
    await waitForText(page.getByTestId('confirm-result'), 'Requeued 1 of 1 selected message(s).');
    await page.getByTestId('confirm-close').click();
    const afterOne = await api('GET', `/api/v1/dlq?queue=${QUEUE}`);
    assert.deepEqual(
      afterOne.body.messages.map((m: { errorMessage: string }) => m.errorMessage),
      ['mailbox full'],
    );

    await page.getByPlaceholder('Filter: transaction, error, partition').fill('');
    await waitForText(page.getByTestId('dlq-total'), /^1 dead letter/);
    await page.getByTestId('requeue-all').click();
    await page.getByTestId('confirm-ok').click();
    await waitForText(page.getByTestId('confirm-result'), `Requeued 1 message(s) of ${QUEUE}.`);
    await page.getByTestId('confirm-close').click();
    assert.equal((await api('GET', `/api/v1/dlq?queue=${QUEUE}`)).body.total, 0);
    await waitForText(page.getByTestId('dlq-total'), /^0 dead letter/);
  });

  test('Consumer groups: lag shown; seek to the end, then back to a time, each confirmed', async () => {
    await api('POST', '/api/v1/stats/refresh');
    await page.goto(`${broker.url}/console/#/groups?queue=${QUEUE}`);
    const audit = page.getByTestId('groups-table').locator('tr', { hasText: 'audit' });
    await waitForText(audit, /audit/);
    await page.getByTestId(`seek-end-audit-${QUEUE}`).click();
    await page.getByTestId('confirm-ok').click();
    await waitForText(
      page.getByTestId('confirm-result'),
      /Moved to the end: [1-9]\d* partition\(s\) updated\./,
    );
    await page.getByTestId('confirm-close').click();
    // At the end, the group has nothing to pop from a partition it had not read (customer-1 is
    // still leased to it by the setup pop).
    const second = 'customer-3';
    const atEnd = await api(
      'GET',
      `/api/v1/pop/queue/${QUEUE}/partition/${second}?consumerGroup=audit&batch=10`,
    );
    assert.equal(atEnd.status, 204);

    // Seek back to before the pushes: the partition's messages are delivered again.
    const local = new Date(new Date(pushedAt).getTime() - new Date().getTimezoneOffset() * 60_000)
      .toISOString()
      .slice(0, 19);
    await audit.getByLabel('Seek time').fill(local);
    await page.getByTestId(`seek-time-audit-${QUEUE}`).click();
    await page.getByTestId('confirm-ok').click();
    await waitForText(page.getByTestId('confirm-result'), /Moved to .*: [1-9]\d* partition\(s\) updated\./);
    await page.getByTestId('confirm-close').click();
    const again = await api(
      'GET',
      `/api/v1/pop/queue/${QUEUE}/partition/${second}?consumerGroup=audit&batch=10`,
    );
    assert.equal(again.status, 200);
    assert.deepEqual(
      again.body.messages.map((m: { transactionId: string }) => m.transactionId),
      [`${second}-1`, `${second}-2`],
    );
  });

  test('Traces: by name and by message', async () => {
    await page.goto(`${broker.url}/console/#/traces`);
    await page.getByTestId('trace-names').getByRole('link', { name: 'order-42' }).click();
    await waitForText(page.getByTestId('traces-by-name'), 'email rendered');
    await page.getByTestId('traces-by-name').getByRole('link', { name: 'customer-1-1' }).click();
    assert.match(page.url(), /transactionId=customer-1-1/);
    await waitForText(page.getByTestId('traces-by-message'), 'email rendered');
  });

  test('System: node list, Redis commands, the outbox relay off, and the push and pop maintenance toggles', async () => {
    await page.goto(`${broker.url}/console/#/system`);
    await waitForText(page.getByTestId('nodes-table'), '(this one)');
    await waitForText(page.getByTestId('backend'), 'redis');
    await waitForText(page.getByTestId('redis-table'), /evalsha|hgetall|get/i);
    // This broker has no hub (console-outbox.test.ts runs one with a relay).
    await waitForText(page.getByTestId('outbox-relaying'), 'no hub configured on this node (BROKER_HUB_URL)');
    await waitForText(page.locator('.card', { hasText: 'Outbox relay' }), 'No bridged queue');

    for (const kind of ['push', 'pop'] as const) {
      await page.getByTestId(`toggle-${kind}-maintenance`).click();
      await page.getByTestId('confirm-ok').click();
      await waitForText(page.getByTestId('confirm-result'), `${kind} maintenance is now on.`);
      await page.getByTestId('confirm-close').click();
      await waitForText(page.getByTestId(`${kind}-maintenance`), 'on');
    }
    const on = await api('GET', '/api/v1/system/maintenance');
    assert.deepEqual([on.body.maintenanceMode, on.body.popMaintenanceMode], [true, true]);
    assert.equal((await api('POST', '/api/v1/push', { items: [{ queue: OTHER, payload: {} }] })).status, 503);

    for (const kind of ['push', 'pop'] as const) {
      await page.getByTestId(`toggle-${kind}-maintenance`).click();
      await page.getByTestId('confirm-ok').click();
      await waitForText(page.getByTestId('confirm-result'), `${kind} maintenance is now off.`);
      await page.getByTestId('confirm-close').click();
    }
    const off = await api('GET', '/api/v1/system/maintenance');
    assert.deepEqual([off.body.maintenanceMode, off.body.popMaintenanceMode], [false, false]);
  });

  test('System: tenants near their limits, from an in-flight override on the admin sub', async () => {
    const queue = 'tenants.limits';
    const put = await api('PUT', '/api/v1/system/limits/inflight/console-admin', { limit: 5 });
    assert.equal(put.status, 200);
    assert.equal(
      (await api('POST', '/api/v1/push', { items: [1, 2, 3, 4].map((n) => ({ queue, payload: { n } })) }))
        .status,
      201,
    );
    const popped = await api('GET', `/api/v1/pop/queue/${queue}?batch=4`);
    assert.equal(popped.body.messages.length, 4);
    await page.goto(`${broker.url}/console/#/system`);
    const table = page.getByTestId('limits-table');
    await waitForText(table, 'console-admin');
    await waitForText(table, '80% — near its limit');
    await waitForText(page.getByTestId('limits-defaults'), '1 override');
    // Back to no limit for the views after this one.
    assert.equal((await api('DELETE', '/api/v1/system/limits/inflight/console-admin')).status, 200);
    await screenshot('limits');
  });

  test('Hub: node subscriber counts, active subscriptions and a live tail over SSE', async () => {
    const hubToken = subscriberToken([{ match: '*' }]);
    await page.goto(`${broker.url}/console/#/hub`);
    const form = page.getByTestId('hub-form');
    await form.locator('input[name=hub]').fill(hub.url);
    await form.locator('input[name=match]').fill(TOPIC);
    await form.locator('input[name=token]').fill(hubToken);
    await form.getByRole('button', { name: 'Connect' }).click();
    assert.match(page.url(), /#\/hub\?hub=/);
    await waitForText(page.getByTestId('tail-state'), 'open');
    // The tail itself is a subscriber of the hub: counted on its node and listed by the API.
    await waitForText(page.getByTestId('hub-nodes-table').locator('tbody tr'), /yes\s*1/);
    await waitForText(page.getByTestId('hub-subscriptions-table'), TOPIC);
    await publishOk(hub.url, { topic: TOPIC, data: '{"title":"live from the hub"}' });
    await waitForText(page.getByTestId('hub-tail-table'), 'live from the hub');
    await screenshot('hub');
  });

  test("Hub: the hub's tenants near their limits, with a hub admin token", async () => {
    const adminToken = publisherToken([{ match: '*' }], { herald: { admin: true } });
    await page.goto(`${broker.url}/console/#/hub`);
    const form = page.getByTestId('hub-form');
    await form.locator('input[name=hub]').fill(hub.url);
    await form.locator('input[name=match]').fill(TOPIC);
    await form.locator('input[name=token]').fill(subscriberToken([{ match: '*' }]));
    await form.locator('input[name=adminToken]').fill(adminToken);
    await form.getByRole('button', { name: 'Connect' }).click();
    await waitForText(page.getByTestId('tail-state'), 'open');
    // The tail is an anonymous-subject stream from this browser: one of its address's slots.
    const override = await fetch(`${hub.origin}/herald/admin/limits/subscriptions/ip:127.0.0.1`, {
      method: 'PUT',
      headers: { authorization: `Bearer ${adminToken}`, 'content-type': 'application/json' },
      body: JSON.stringify({ limit: 1 }),
    });
    assert.equal(override.status, 200);
    const table = page.getByTestId('hub-limits-table');
    await waitForText(table, 'ip:127.0.0.1');
    await waitForText(table, '100% — near its limit');
    await waitForText(page.getByTestId('hub-limits-defaults'), 'streams per subject 50');
    const removed = await fetch(`${hub.origin}/herald/admin/limits/subscriptions/ip:127.0.0.1`, {
      method: 'DELETE',
      headers: { authorization: `Bearer ${adminToken}` },
    });
    assert.equal(removed.status, 200);
  });

  test("no Content-Security-Policy violation on any view above, the hub's live tail included", () => {
    // Issue #22: a CSP that blocks the page's own requests shows here first, by name.
    assert.deepEqual(cspViolations, []);
  });

  test('a phone-sized viewport: the menu opens and a view renders', async () => {
    const phone = await (await browser.newContext({ viewport: { width: 390, height: 844 } })).newPage();
    await signIn(phone, broker, await token('admin'), '#/queues');
    await waitForText(phone.getByTestId('queues-table'), QUEUE);
    await phone.getByRole('button', { name: 'Menu' }).click();
    await phone.getByRole('link', { name: 'Dead letters' }).click();
    await waitForText(phone.getByTestId('dlq-total'), /dead letter/);
    await phone.close();
  });
});

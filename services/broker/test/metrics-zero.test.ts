/*
 * Issue #13: Grafana panels read "No data" until the first event because labelled counters had
 * no series. The broker's counters whose label values are known in advance exist at 0 from the
 * start (per-queue counters cannot: queues are not known before they are used).
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { AUTH_FAILURE_REASONS } from '@herald/auth';
import { startTestBroker } from './helpers.js';

test('a fresh broker exposes transactions{result} and auth_failures{reason} at 0', async () => {
  const broker = await startTestBroker('memory');
  try {
    const text = await (await fetch(`${broker.url}/metrics`)).text();
    for (const result of ['committed', 'rejected']) {
      assert.match(
        text,
        new RegExp(`^herald_broker_transactions_total\\{[^}]*result="${result}"[^}]*\\} 0$`, 'm'),
      );
    }
    for (const reason of AUTH_FAILURE_REASONS) {
      assert.match(
        text,
        new RegExp(`^herald_broker_auth_failures_total\\{[^}]*reason="${reason}"[^}]*\\} 0$`, 'm'),
      );
    }
  } finally {
    await broker.close();
  }
});

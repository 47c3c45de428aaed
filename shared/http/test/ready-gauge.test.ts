/*
 * herald_ready follows readiness on its own timer (issue #9, defect 8): a node scraped on
 * /metrics by Prometheus, with no probe calling /readyz, must not report a stale value.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { createMetrics } from '@herald/metrics';
import { waitFor } from '@herald/testkit';
import { createServerKit, type HttpConfig, Lifecycle } from '../src/index.js';

const config: HttpConfig = {
  PORT: 0,
  HOST: '127.0.0.1',
  TLS_CERT_FILE: undefined,
  TLS_KEY_FILE: undefined,
  TRUSTED_PROXIES: [],
  LOG_LEVEL: 'silent',
  SHUTDOWN_TIMEOUT: 5000,
};

test('herald_ready follows readiness without any /readyz request', async () => {
  const { app, lifecycle } = createServerKit({
    name: 'test',
    config,
    metrics: createMetrics(),
    readinessIntervalMs: 20,
  });
  let reason: string | undefined = 'connection refused';
  let evaluations = 0;
  lifecycle.addReadinessCheck('redis', () => {
    evaluations += 1;
    return reason;
  });
  const gauge = async () =>
    /^herald_ready (\d)$/m.exec((await app.inject({ url: '/metrics' })).body)?.[1] ?? 'absent';
  try {
    await app.ready();
    await waitFor(async () => (await gauge()) === '0', { what: 'herald_ready 0 while not ready' });
    reason = undefined;
    await waitFor(async () => (await gauge()) === '1', { what: 'herald_ready 1 once ready' });
    reason = 'connection lost';
    await waitFor(async () => (await gauge()) === '0', { what: 'herald_ready 0 after an outage' });
  } finally {
    await app.close();
  }
  // Stopped with the app: no evaluation after close. A witness on the same 20 ms timer counts
  // the intervals that pass: five of its evaluations are four of the app's, had it kept its timer.
  const atClose = evaluations;
  const witness = new Lifecycle();
  let witnessed = 0;
  witness.addReadinessCheck('witness', () => {
    witnessed += 1;
    return undefined;
  });
  witness.startWatching(20);
  try {
    await waitFor(() => witnessed >= 5, { what: 'five evaluations of the witness' });
  } finally {
    witness.stopWatching();
  }
  assert.equal(evaluations, atClose);
});

test('a drain that starts during a timed evaluation leaves herald_ready at 0', async () => {
  const { app, lifecycle } = createServerKit({ name: 'test', config, metrics: createMetrics() });
  let release: () => void = () => undefined;
  let started: () => void = () => undefined;
  const checkStarted = new Promise<void>((resolve) => {
    started = resolve;
  });
  lifecycle.addReadinessCheck('slow', async () => {
    started();
    await new Promise<void>((resolve) => {
      release = resolve;
    });
    return undefined;
  });
  await app.ready(); // the first timed evaluation starts here and waits in the check
  await checkStarted;
  await lifecycle.drain(Date.now() + 1000);
  release();
  await new Promise((resolve) => setImmediate(resolve));
  assert.match((await app.inject({ url: '/metrics' })).body, /^herald_ready 0$/m);
  await app.close();
});

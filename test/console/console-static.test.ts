/*
 * How the broker serves the console's files (services/broker/src/routes/console.ts): public with
 * JWT on, never outside the build directory, and a node whose console was not built still
 * starts and says so at /console/.
 */
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, test } from 'node:test';
import { type Broker, brokerSpec, startBroker } from '@herald/broker';
import { parseEnv } from '@herald/config';
import { startConsoleBroker } from './support.js';

describe('console static files', () => {
  const started: Broker[] = [];
  after(async () => {
    for (const broker of started) await broker.close();
  });

  test('with JWT on, /console/ and its assets answer without a token; the API still needs one', async () => {
    const broker = await startConsoleBroker();
    started.push(broker);
    const redirect = await fetch(`${broker.url}/console`, { redirect: 'manual' });
    assert.equal(redirect.status, 302);
    assert.equal(redirect.headers.get('location'), '/console/');
    const page = await fetch(`${broker.url}/console/`);
    assert.equal(page.status, 200);
    assert.match(page.headers.get('content-type') ?? '', /^text\/html/);
    assert.match(page.headers.get('content-security-policy') ?? '', /script-src 'self'/);
    const html = await page.text();
    const script = /src="(\/console\/assets\/[^"]+\.js)"/.exec(html)?.[1];
    assert.ok(script, html);
    const asset = await fetch(broker.url + script);
    assert.equal(asset.status, 200);
    assert.match(asset.headers.get('cache-control') ?? '', /immutable/);
    assert.equal((await fetch(`${broker.url}/api/v1/resources/queues`)).status, 401);
  });

  test('no file outside the build directory is served, whatever the spelling', async () => {
    const broker = started[0] as Broker;
    for (const target of [
      '/console/../package.json',
      '/console/%2e%2e/package.json',
      '/console/..%2fpackage.json',
    ]) {
      const response = await fetch(broker.url + target);
      const body = await response.text();
      assert.ok(!body.includes('"@herald/console"'), `${target} served ${body.slice(0, 80)}`);
      assert.notEqual(response.status, 200, target);
    }
  });

  test('a node without a built console starts, and /console/ answers 404 saying how to build it', async () => {
    const empty = mkdtempSync(join(tmpdir(), 'herald-console-'));
    try {
      const broker = await startBroker(
        parseEnv(brokerSpec, { PORT: '0', HOST: '127.0.0.1', LOG_LEVEL: 'silent' }),
        {
          fastify: { logger: false },
          consoleRoot: empty,
        },
      );
      started.push(broker);
      assert.equal((await fetch(`${broker.url}/health`)).status, 200);
      const response = await fetch(`${broker.url}/console/`);
      assert.equal(response.status, 404);
      assert.match(((await response.json()) as { error: string }).error, /not built.*npm run build/);
      // The in-process backend's node list is this node.
      const nodes = (await (await fetch(`${broker.url}/api/v1/system/nodes`)).json()) as {
        backend: string;
        nodes: { self: boolean }[];
      };
      assert.equal(nodes.backend, 'memory');
      assert.deepEqual(
        nodes.nodes.map((node) => node.self),
        [true],
      );
    } finally {
      rmSync(empty, { recursive: true, force: true });
    }
  });
});

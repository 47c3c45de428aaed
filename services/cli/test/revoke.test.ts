/*
 * `herald token revoke` against a running hub and broker (issue #24 item 3): one call puts the
 * token on both deny lists, each answer is printed, any failure exits non-zero.
 */
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { type Broker, brokerSpec, startBroker } from '@herald/broker';
import { parseEnv } from '@herald/config';
import { type HubServer, parseHubConfig, startHub } from '@herald/hub';
import { runCli } from '../src/cli.js';

const SECRET = 'cli-revocation-test-secret-0123456789';
let hub: HubServer;
let hubOrigin: string;
let broker: Broker;

before(async () => {
  hub = await startHub(
    parseHubConfig({
      PORT: '0',
      HOST: '127.0.0.1',
      LOG_LEVEL: 'silent',
      // Development mode: a loopback client may send a token over plain HTTP.
      MERCURE_DEV: '1',
      MERCURE_PUBLISHER_JWT_KEY: SECRET,
      MERCURE_SUBSCRIBER_JWT_KEY: SECRET,
    }),
  );
  const address = hub.app.server.address();
  hubOrigin = `http://127.0.0.1:${typeof address === 'object' && address ? address.port : 0}`;
  broker = await startBroker(
    parseEnv(brokerSpec, { PORT: '0', HOST: '127.0.0.1', JWT_ENABLED: 'true', JWT_SECRET: SECRET }),
    { fastify: { logger: false } },
  );
});
after(async () => {
  await hub.app.close();
  await broker.close();
});

async function cli(argv: string[], environment: Record<string, string> = {}) {
  let stdout = '';
  let stderr = '';
  const code = await runCli(
    argv,
    { stdout: (text) => (stdout += text), stderr: (text) => (stderr += text) },
    environment,
  );
  return { code, stdout, stderr };
}

async function mint(...options: string[]): Promise<string> {
  const { code, stdout } = await cli(['token', '--secret', SECRET, ...options]);
  assert.equal(code, 0);
  return stdout.trimEnd().split('\n').at(-1) ?? '';
}

async function subscribeStatus(token: string): Promise<number> {
  const controller = new AbortController();
  const response = await fetch(`${hubOrigin}/.well-known/mercure?match=*`, {
    headers: { authorization: `Bearer ${token}` },
    signal: controller.signal,
  });
  controller.abort();
  return response.status;
}

async function brokerStatus(token: string): Promise<number> {
  const response = await fetch(`${broker.url}/api/v1/resources/queues`, {
    headers: { authorization: `Bearer ${token}` },
  });
  await response.arrayBuffer();
  return response.status;
}

test('revokes a jti on a hub and a broker in one call, printing both answers', async () => {
  const admin = await mint('--hub-admin', '--role', 'admin');
  const victim = await mint('--jti', 'victim-1', '--subscribe', '*', '--role', 'read-only', '--exp', '600');
  assert.deepEqual([await subscribeStatus(victim), await brokerStatus(victim)], [200, 200]);

  const { code, stdout, stderr } = await cli(
    [
      'token',
      'revoke',
      '--hub',
      `${hubOrigin}/.well-known/mercure`,
      '--broker',
      broker.url,
      '--token',
      victim,
    ],
    { HERALD_ADMIN_TOKEN: admin },
  );
  assert.equal(code, 0, stderr);
  assert.match(
    stdout,
    /^hub http:\/\/127\.0\.0\.1:\d+\/herald\/admin\/revocations: 201 \{"id":"jti:victim-1"/m,
  );
  assert.match(
    stdout,
    /^broker http:\/\/127\.0\.0\.1:\d+\/api\/v1\/system\/revocations: 201 \{"id":"jti:victim-1"/m,
  );
  assert.deepEqual([await subscribeStatus(victim), await brokerStatus(victim)], [401, 401]);

  const bySub = await cli([
    'token',
    'revoke',
    '--broker',
    broker.url,
    '--admin-token',
    admin,
    '--sub',
    'bob',
    '--before',
    '2026-01-01T00:00:00Z',
    '--expires',
    '4102444800',
  ]);
  assert.equal(bySub.code, 0, bySub.stderr);
  assert.match(bySub.stdout, /"before":1767225600000,"expiresAt":4102444800000/);
});

test('exits non-zero, printing the answer, when a service refuses or cannot be reached', async () => {
  const notAdmin = await mint('--publish', '*', '--role', 'read-only');
  const refused = await cli(['token', 'revoke', '--hub', hubOrigin, '--broker', broker.url, '--jti', 'x'], {
    HERALD_ADMIN_TOKEN: notAdmin,
  });
  assert.equal(refused.code, 1);
  assert.match(refused.stderr, /^hub .*: 403 The token does not carry "herald": \{"admin": true\}$/m);
  assert.match(refused.stderr, /^broker .*: 403 \{"error":"Insufficient permissions"\}$/m);

  const admin = await mint('--hub-admin', '--role', 'admin');
  const unreachable = await cli([
    'token',
    'revoke',
    '--broker',
    'http://127.0.0.1:1',
    '--admin-token',
    admin,
    '--jti',
    'x',
  ]);
  assert.equal(unreachable.code, 1);
  assert.match(
    unreachable.stderr,
    /^broker http:\/\/127\.0\.0\.1:1\/api\/v1\/system\/revocations: not reached/m,
  );
});

test('refuses incomplete or contradictory options before sending anything', async () => {
  // [arguments, message]
  // biome-ignore format: a table, one case per line
  const cases: readonly (readonly [string[], RegExp])[] = [
    [['--jti', 'x', '--admin-token', 'a'], /give at least one --hub <url> or --broker <url>/],
    [['--hub', 'http://h', '--jti', 'x'], /give --admin-token <jwt> or set HERALD_ADMIN_TOKEN/],
    [['--hub', 'http://h', '--admin-token', 'a'], /give exactly one of --jti, --sub or --token/],
    [['--hub', 'http://h', '--admin-token', 'a', '--jti', 'x', '--sub', 'y'], /give exactly one of --jti, --sub or --token/],
    [['--hub', 'http://h', '--admin-token', 'a', '--jti', 'x', '--before', '1'], /--before applies to --sub only/],
    [['--hub', 'http://h', '--admin-token', 'a', '--sub', 'y', '--before', 'soon'], /--before takes an ISO 8601 time or epoch seconds/],
    [['--hub', 'not a url', '--admin-token', 'a', '--jti', 'x'], /--hub must be a URL/],
    [['--colour', 'red'], /Unknown option '--colour'/],
  ];
  for (const [argv, message] of cases) {
    const { code, stdout, stderr } = await cli(['token', 'revoke', ...argv]);
    assert.equal(code, 1, argv.join(' '));
    assert.equal(stdout, '');
    assert.match(stderr, message, argv.join(' '));
    assert.match(stderr, /\(see herald token revoke --help\)/);
  }
});

test('herald token revoke --help prints its own usage; herald token --hub-admin adds the admin claim', async () => {
  const help = await cli(['token', 'revoke', '--help']);
  assert.equal(help.code, 0);
  assert.match(help.stdout, /^Usage: herald token revoke/);
  assert.deepEqual((await cli(['help', 'token', 'revoke'])).stdout, help.stdout);
  const token = await mint('--hub-admin', '--jti', 'a-1');
  const payload = JSON.parse(Buffer.from(token.split('.')[1] ?? '', 'base64url').toString('utf8'));
  assert.deepEqual(payload, { jti: 'a-1', herald: { admin: true } });
});

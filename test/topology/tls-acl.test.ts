/*
 * Both services on a Redis that takes TLS and an ACL user only (issue #12: "with TLS and auth"):
 * `rediss://user:password@host:port` with the server's CA trusted through NODE_EXTRA_CA_CERTS
 * reaches it; a wrong password, no user, or a certificate the node does not trust leaves the
 * node not ready (answering /readyz, logging a few lines), and its output never carries the
 * password.
 *
 * The server: a TLS port (client certificates not required), an ACL user `app` with every
 * right, and `default` allowed PING and SHUTDOWN only (the harness's checks on the plain port).
 */
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import { promisify } from 'node:util';
import {
  createTestCertificates,
  freePort,
  RedisServer,
  type TestCertificates,
  uniquePrefix,
  waitFor,
} from '@herald/testkit';
import { assertPushPop, BrokerNode } from '../broker/nodes.js';
import { publishOk, spawnHub } from '../hub/support.js';
import { startNode } from '../security/nodes.js';

const run = promisify(execFile);

const USER = 'app';
const PASSWORD = 'tls-acl-password-never-printed';
/** Refusals by Redis to wait for once a refused node answered 503: it kept trying, and failing. */
const MORE_REFUSALS = 3;

let certificates: TestCertificates;
let server: RedisServer;
let tlsPort: number;

before(async () => {
  certificates = createTestCertificates();
  tlsPort = await freePort();
  server = await RedisServer.start({
    extraArguments: [
      '--tls-port',
      String(tlsPort),
      '--tls-cert-file',
      certificates.certFile,
      '--tls-key-file',
      certificates.keyFile,
      '--tls-ca-cert-file',
      certificates.caFile,
      '--tls-auth-clients',
      'no',
      '--user',
      'default',
      'on',
      'nopass',
      'resetchannels',
      '-@all',
      '+ping',
      '+shutdown',
      '--user',
      USER,
      'on',
      `>${PASSWORD}`,
      '~*',
      '&*',
      '+@all',
    ],
  });
});
after(async () => {
  await server?.destroy();
});

/**
 * How often Redis has turned a client away: its error replies (a refused AUTH or command; INFO
 * read as `app` on the TLS port) and the TLS handshakes it failed (a line each in its log).
 */
async function refusals(): Promise<number> {
  const { stdout } = await run(
    'redis-cli',
    [
      '-h',
      '127.0.0.1',
      '-p',
      String(tlsPort),
      '--tls',
      '--cacert',
      certificates.caFile,
      '--user',
      USER,
      'INFO',
      'stats',
    ],
    { env: { ...process.env, REDISCLI_AUTH: PASSWORD }, encoding: 'utf8', timeout: 5000 },
  );
  const errorReplies = /^total_error_replies:(\d+)/m.exec(stdout)?.[1];
  assert.ok(errorReplies !== undefined, `no total_error_replies in INFO stats:\n${stdout}`);
  const log = join(server.directory, 'log');
  const handshakes = existsSync(log)
    ? readFileSync(log, 'utf8')
        .split('\n')
        .filter((line) => line.includes('Error accepting a client connection')).length
    : 0;
  return Number(errorReplies) + handshakes;
}

function redisUrl(credentials = `${USER}:${PASSWORD}`): string {
  return `rediss://${credentials ? `${credentials}@` : ''}localhost:${tlsPort}`;
}

const trusted = () => ({ NODE_EXTRA_CA_CERTS: certificates.caFile });

test('the broker on rediss:// with an ACL user: ready, push and pop go through', async () => {
  const node = await BrokerNode.start({
    ...trusted(),
    REDIS_URL: redisUrl(),
    BROKER_KEY_PREFIX: uniquePrefix('tls'),
  });
  try {
    await assertPushPop(node.url, 'tls.q');
  } finally {
    await node.stop();
  }
});

test('the hub on rediss:// with an ACL user: ready (its pub/sub probe came back) and publishes', async () => {
  const node = await spawnHub({
    ...trusted(),
    REDIS_URL: redisUrl(),
    MERCURE_REDIS_PREFIX: uniquePrefix('tls-hub'),
  });
  try {
    assert.ok(await node.isReady(), node.output());
    await publishOk(node.url, { topic: 'https://example.com/tls', data: 'over TLS' });
  } finally {
    await node.stop();
  }
});

const refused: [string, () => Record<string, string>][] = [
  ['a wrong password', () => ({ ...trusted(), REDIS_URL: redisUrl(`${USER}:not-${PASSWORD}`) })],
  ['no user (the default user may only PING)', () => ({ ...trusted(), REDIS_URL: redisUrl('') })],
  ['a server certificate the node does not trust', () => ({ REDIS_URL: redisUrl() })],
];

for (const service of ['hub', 'broker'] as const) {
  for (const [what, environment] of refused) {
    test(`the ${service} with ${what}: not ready, and the password is never printed`, async () => {
      const node = await startNode(service, { LOG_LEVEL: 'info', ...environment() }, { waitReady: false });
      try {
        assert.equal((await fetch(`${node.origin}/readyz`)).status, 503, node.output());
        // Still not ready after a few more attempts, each refused: a reconnect (a wrong password,
        // an untrusted certificate) or a command (no user: connected, every command refused).
        const refused = await refusals();
        await waitFor(async () => (await refusals()) >= refused + MORE_REFUSALS, {
          what: `Redis to refuse the ${service} ${MORE_REFUSALS} more times`,
          timeoutMs: 30_000,
          intervalMs: 100,
        });
        assert.equal((await fetch(`${node.origin}/readyz`)).status, 503, node.output());
        assert.doesNotMatch(node.output(), new RegExp(PASSWORD));
        // A few lines per refusal, not a log flood (the broker's worker once retried a refused
        // command in a busy loop: megabytes of log a second, /readyz starved).
        assert.ok(node.output().length < 100_000, `${node.output().length} bytes of log`);
      } finally {
        await node.stop();
      }
    });
  }
}

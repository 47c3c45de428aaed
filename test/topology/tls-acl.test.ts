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
import { after, before, test } from 'node:test';
import { setTimeout as delay } from 'node:timers/promises';
import {
  createTestCertificates,
  freePort,
  RedisServer,
  type TestCertificates,
  uniquePrefix,
} from '@herald/testkit';
import { assertPushPop, BrokerNode } from '../broker/nodes.js';
import { publishOk, spawnHub } from '../hub/support.js';
import { startNode } from '../security/nodes.js';

const USER = 'app';
const PASSWORD = 'tls-acl-password-never-printed';

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
        // Still not ready after a few reconnect attempts.
        await delay(1500);
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

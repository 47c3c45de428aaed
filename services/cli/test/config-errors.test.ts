/*
 * Issue #13: a configuration error is one line on stderr naming the variable, exit 1, never a
 * stack and never a password. The services are spawned as an operator starts them (herald hub,
 * herald broker).
 */
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { test } from 'node:test';
import { fileURLToPath } from 'node:url';

const herald = fileURLToPath(new URL('../bin/herald.js', import.meta.url));
const PASSWORD = 'hunter2-secret';

/** Runs a service until it exits or logs "listening" (then it is stopped: it booted). */
async function boot(command: 'hub' | 'broker', environment: Record<string, string>) {
  const inherited = Object.fromEntries(
    Object.entries(process.env).filter(([name]) => !/^(REDIS_|MERCURE_|JWT_|BROKER_)/.test(name)),
  );
  const child = spawn(process.execPath, [herald, command], {
    env: { ...inherited, PORT: '0', HOST: '127.0.0.1', ...environment },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stdout = '';
  let stderr = '';
  let listened = false;
  child.stdout.on('data', (chunk: Buffer) => {
    stdout += chunk.toString();
    if (!listened && stdout.includes(`${command} listening`)) {
      listened = true;
      child.kill('SIGTERM');
    }
  });
  child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
  const code = await new Promise<number | null>((resolve) => child.on('close', resolve));
  return { code, stdout, stderr, listened };
}

function assertOneLine(result: Awaited<ReturnType<typeof boot>>, variable: string, reason: RegExp) {
  assert.equal(result.code, 1, result.stderr);
  assert.equal(result.listened, false);
  const lines = result.stderr.trimEnd().split('\n');
  assert.equal(lines.length, 1, `expected one line, got:\n${result.stderr}`);
  assert.match(lines[0] as string, new RegExp(`^configuration error: ${variable}: `));
  assert.match(lines[0] as string, reason);
  assert.doesNotMatch(result.stderr + result.stdout, new RegExp(PASSWORD));
}

test('the hub without a publisher key: one line naming MERCURE_PUBLISHER_JWT_KEY, no stack', async () => {
  assertOneLine(await boot('hub', {}), 'MERCURE_PUBLISHER_JWT_KEY', /is required/);
});

test('REDIS_URL=redis//… (no colon) with a password: one line, the password not shown', async () => {
  for (const command of ['hub', 'broker'] as const) {
    const result = await boot(command, {
      MERCURE_PUBLISHER_JWT_KEY: 'k',
      REDIS_URL: `redis//:${PASSWORD}@localhost`,
    });
    assertOneLine(result, 'REDIS_URL', /":\/\/" is missing after the scheme/);
  }
});

test('REDIS_URL with port 99999: the port is named as out of range, not "not a URL"', async () => {
  for (const command of ['hub', 'broker'] as const) {
    const result = await boot(command, {
      MERCURE_PUBLISHER_JWT_KEY: 'k',
      REDIS_URL: `redis://:${PASSWORD}@localhost:99999`,
    });
    assertOneLine(result, 'REDIS_URL', /the port 99999 is out of range \(1-65535\)/);
  }
});

test('a BROKER_* typo is refused with the name and a suggestion', async () => {
  assertOneLine(
    await boot('broker', { BROKER_KEY_PREFX: 'x:' }),
    'BROKER_KEY_PREFX',
    /unknown setting \(check the spelling; did you mean BROKER_KEY_PREFIX\?\)/,
  );
});

test('the variables Kubernetes injects for Services named broker and mercure do not stop a boot', async () => {
  const broker = await boot('broker', {
    BROKER_SERVICE_HOST: '10.0.0.7',
    BROKER_SERVICE_PORT: '6632',
    BROKER_SERVICE_PORT_HTTP: '6632',
    BROKER_PORT: 'tcp://10.0.0.7:6632',
    BROKER_PORT_6632_TCP: 'tcp://10.0.0.7:6632',
    BROKER_PORT_6632_TCP_PROTO: 'tcp',
    BROKER_PORT_6632_TCP_PORT: '6632',
    BROKER_PORT_6632_TCP_ADDR: '10.0.0.7',
  });
  assert.equal(broker.listened, true, broker.stderr);
  const hub = await boot('hub', {
    MERCURE_PUBLISHER_JWT_KEY: 'k',
    MERCURE_SERVICE_HOST: '10.0.0.9',
    MERCURE_SERVICE_PORT: '80',
    MERCURE_PORT: 'tcp://10.0.0.9:80',
    MERCURE_PORT_80_TCP: 'tcp://10.0.0.9:80',
    MERCURE_PORT_80_TCP_ADDR: '10.0.0.9',
  });
  assert.equal(hub.listened, true, hub.stderr);
});

import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { test } from 'node:test';
import { fileURLToPath } from 'node:url';

const fixture = fileURLToPath(new URL('./fixtures/server.ts', import.meta.url));

function nextLine(stream: NodeJS.ReadableStream, pattern: RegExp): Promise<RegExpMatchArray> {
  return new Promise((resolve) => {
    let buffer = '';
    const onData = (chunk: Buffer) => {
      buffer += chunk.toString();
      const match = buffer.match(pattern);
      if (match) {
        stream.off('data', onData);
        resolve(match);
      }
    };
    stream.on('data', onData);
  });
}

test('SIGTERM: readiness fails first, in-flight work finishes, then exit 0', async () => {
  const child = spawn(process.execPath, ['--import', 'tsx', fixture], {
    env: { ...process.env, PORT: '0', HOST: '127.0.0.1', LOG_LEVEL: 'silent', SHUTDOWN_TIMEOUT: '10s' },
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  const exited = once(child, 'exit');
  const [, port] = await nextLine(child.stdout, /listening (\d+)/);
  const base = `http://127.0.0.1:${port}`;
  assert.equal((await fetch(`${base}/readyz`)).status, 200);

  const started = nextLine(child.stdout, /slow request started/);
  const inFlight = fetch(`${base}/slow`);
  await started;
  const draining = nextLine(child.stdout, /draining/);
  child.kill('SIGTERM');
  await draining;
  assert.equal((await fetch(`${base}/readyz`)).status, 503);

  const response = await inFlight;
  assert.equal(response.status, 200);
  assert.deepEqual(await response.json(), { finished: true });
  const [code] = await exited;
  assert.equal(code, 0);
});

test('a close step that never finishes cannot hold the process past SHUTDOWN_TIMEOUT', async () => {
  const child = spawn(process.execPath, ['--import', 'tsx', fixture, '--hang-on-close'], {
    env: { ...process.env, PORT: '0', HOST: '127.0.0.1', LOG_LEVEL: 'silent', SHUTDOWN_TIMEOUT: '1s' },
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  const exited = once(child, 'exit');
  await nextLine(child.stdout, /listening (\d+)/);
  child.kill('SIGTERM');
  const [code] = await exited;
  assert.equal(code, 0);
});

test('a configuration error stops the process before it binds, naming the variable', async () => {
  const child = spawn(process.execPath, ['--import', 'tsx', fixture], {
    env: { ...process.env, PORT: 'eighty' },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stderr = '';
  let stdout = '';
  child.stderr.on('data', (chunk) => (stderr += chunk));
  child.stdout.on('data', (chunk) => (stdout += chunk));
  const [code] = await once(child, 'exit');
  assert.equal(code, 1);
  assert.match(stderr, /PORT: expected an integer/);
  assert.doesNotMatch(stdout, /listening/);
});

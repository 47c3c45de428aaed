/*
 * Issue #13: `herald broker | head -5` then Ctrl-C hung for good. Once the reader of stdout has
 * gone, pino's asynchronous destination flushed its buffer at exit in a loop that retried EPIPE
 * forever. The logger now writes synchronously and drops lines after EPIPE
 * (shared/http/src/log-destination.ts). Each service is started with stdout on a pipe, the pipe's
 * reading end is closed after the "listening" line (as `head` does), and SIGINT must end the
 * process with code 0. The timeout only turns the old hang into a failure.
 */
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { test } from 'node:test';
import { fileURLToPath } from 'node:url';

const herald = fileURLToPath(new URL('../bin/herald.js', import.meta.url));

for (const command of ['broker', 'hub']) {
  test(`herald ${command} with its stdout reader gone exits on SIGINT`, { timeout: 120_000 }, async (t) => {
    const { REDIS_URL: _unset, ...inherited } = process.env;
    const child = spawn(process.execPath, [herald, command], {
      env: { ...inherited, PORT: '0', HOST: '127.0.0.1', MERCURE_PUBLISHER_JWT_KEY: 'test-secret' },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    t.after(() => {
      if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
    });
    let stderr = '';
    child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
    const exited = once(child, 'exit');
    let seen = '';
    await new Promise<void>((resolve, reject) => {
      child.once('exit', (code) => reject(new Error(`exited early with ${code}: ${stderr}`)));
      child.stdout.on('data', (chunk: Buffer) => {
        seen += chunk.toString();
        if (seen.includes(`${command} listening`)) resolve();
      });
    });
    // As `head` does once it has its lines: the reading end closes, later writes get EPIPE.
    child.stdout.destroy();
    child.kill('SIGINT');
    const [code, signal] = await exited;
    assert.deepEqual({ code, signal }, { code: 0, signal: null }, stderr);
  });
}

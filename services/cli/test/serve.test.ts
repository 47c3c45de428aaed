import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { test } from 'node:test';
import { fileURLToPath } from 'node:url';

const herald = fileURLToPath(new URL('../bin/herald.js', import.meta.url));

/** Starts `herald <command>`, waits for its "listening" log line, returns the port and the process. */
async function serve(command: string, environment: Record<string, string>) {
  const { REDIS_URL: _unset, ...inherited } = process.env;
  const child = spawn(process.execPath, [herald, command], {
    env: { ...inherited, PORT: '0', HOST: '127.0.0.1', ...environment },
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  let buffer = '';
  const port = await new Promise<number>((resolve, reject) => {
    child.once('exit', (code) => reject(new Error(`herald ${command} exited with ${code}: ${buffer}`)));
    child.stdout.on('data', (chunk: Buffer) => {
      buffer += chunk.toString();
      const match = buffer.match(/"port":(\d+).*"msg":"\w+ listening"/);
      if (match) resolve(Number(match[1]));
    });
  });
  return { child, port };
}

test('herald hub and herald broker start a node that answers and stops on SIGTERM', async () => {
  const cases: [string, Record<string, string>][] = [
    ['hub', { MERCURE_PUBLISHER_JWT_KEY: 'test-secret', MERCURE_SUBSCRIBER_JWT_KEY: 'test-secret' }],
    ['broker', {}],
  ];
  for (const [command, environment] of cases) {
    const { child, port } = await serve(command, environment);
    const exited = once(child, 'exit');
    const response = await fetch(`http://127.0.0.1:${port}/healthz`);
    assert.equal(response.status, 200, command);
    child.kill('SIGTERM');
    const [code] = await exited;
    assert.equal(code, 0, command);
  }
});

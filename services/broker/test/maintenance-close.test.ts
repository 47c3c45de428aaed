/*
 * Closing a node's maintenance while one of its jobs never settles ends everything the BullMQ
 * worker runs: the process exits by itself. Before the fix, close() waited (bounded) for the job,
 * the bound cut the wait, and the worker's lock-renewal timer went on forever: the process never
 * exited (seen as the broker failover test's process outliving its tests).
 */
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { after, test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { stopTestRedis, testRedisEnvironment, uniquePrefix } from '@herald/testkit';

after(stopTestRedis);

const FIXTURE = fileURLToPath(new URL('./fixtures/hanging-maintenance-job.ts', import.meta.url));
/** Far more than closing takes (a few bounded steps of 2 s), far less than "never". */
const EXIT_WITHIN_MS = 20_000;

test('maintenance closed while a job hangs: nothing of the worker keeps the process alive', async () => {
  const environment = await testRedisEnvironment();
  const child = spawn(process.execPath, ['--import', 'tsx', FIXTURE], {
    env: { ...process.env, ...environment, BROKER_KEY_PREFIX: uniquePrefix('maintenance-close') },
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  let output = '';
  child.stdout.setEncoding('utf8');
  child.stdout.on('data', (chunk: string) => {
    output += chunk;
  });
  const exited = once(child, 'exit');
  const timer = setTimeout(() => child.kill('SIGKILL'), EXIT_WITHIN_MS);
  const [code, signal] = (await exited) as [number | null, NodeJS.Signals | null];
  clearTimeout(timer);
  assert.match(output, /job running\nclosed\n/, 'the job was running when maintenance closed');
  assert.deepEqual(
    { code, signal },
    { code: 0, signal: null },
    `the process exits by itself within ${EXIT_WITHIN_MS} ms`,
  );
});

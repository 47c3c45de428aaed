/*
 * Loading the services must not load Node's bundled undici (`internal/deps/undici/undici`). On
 * Node 26 node:http has lazy `WebSocket`, `CloseEvent` and `MessageEvent` exports taken from it,
 * and an ESM `import` of node:http reads every export: the bundled undici then costs a broker
 * ~8 MB of heap and ~3 MB of RSS at start for nothing (docs/benchmarks.md, "Broker footprint").
 * The services therefore take node:http through `require` (@herald/errors, @herald/auth's JWKS).
 */
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { createRequire } from 'node:module';
import { test } from 'node:test';
import { fileURLToPath } from 'node:url';

const REPO = fileURLToPath(new URL('../..', import.meta.url));

/** The bundled-undici entries of process.moduleLoadList after running `script` as a module. */
function undiciLoadedBy(script: string): string[] {
  const run = spawnSync(
    process.execPath,
    [
      '--input-type=module',
      '-e',
      `${script}\nprocess.stdout.write(JSON.stringify(process.moduleLoadList.filter((name) => name.includes('undici'))));`,
    ],
    { cwd: REPO, encoding: 'utf8' },
  );
  assert.equal(run.status, 0, run.stderr);
  return JSON.parse(run.stdout) as string[];
}

test("loading the broker, the hub and their shared packages does not load Node's bundled undici", () => {
  const loaded = undiciLoadedBy(
    ["'@herald/broker'", "'@herald/hub'", "'@herald/auth'", "'@herald/errors'", "'@herald/http'"]
      .map((name) => `await import(${name});`)
      .join('\n'),
  );
  assert.deepEqual(loaded, []);
});

test('the check sees the trap where this Node has it: an ESM import of node:http loads undici iff its WebSocket export is lazy', () => {
  const http = createRequire(import.meta.url)('node:http') as object;
  const lazyWebSocket = Object.getOwnPropertyDescriptor(http, 'WebSocket')?.get !== undefined;
  const loaded = undiciLoadedBy("await import('node:http');");
  assert.equal(loaded.length > 0, lazyWebSocket, `loaded: ${loaded.join(', ')}`);
});

test("loading the broker loads BullMQ's queue and worker, not its index with the PostgreSQL backend", () => {
  const run = spawnSync(
    process.execPath,
    [
      '--input-type=module',
      '-e',
      [
        "const { createRequire } = await import('node:module');",
        "await import('@herald/broker');",
        "const loaded = Object.keys(createRequire(process.cwd() + '/').cache).filter((name) => name.includes('/bullmq/'));",
        'process.stdout.write(JSON.stringify(loaded));',
      ].join('\n'),
    ],
    { cwd: REPO, encoding: 'utf8' },
  );
  assert.equal(run.status, 0, run.stderr);
  const loaded = (JSON.parse(run.stdout) as string[]).map((name) =>
    name.replace(/.*\/bullmq\/dist\/cjs\//, ''),
  );
  assert.ok(loaded.includes('classes/worker.js'), `BullMQ's worker is loaded: ${loaded.length} modules`);
  assert.deepEqual(
    loaded.filter((name) => name === 'index.js' || name.startsWith('postgres/')),
    [],
  );
});

/*
 * docs/hub.md's quick start works as written with curl on localhost (issue #13). The block after
 * the `quick-start` marker is run by bash, line for line, except the build (`npm ci && npm run
 * build`: the test runs on a built tree). Only two things are added, never changed: the port
 * (8080 → a free one, in the URLs and as PORT for the hub) and, after each line that puts a process in
 * the background, a wait until it is ready (the hub answers /healthz; the subscriber is counted by
 * mercure_subscribers_connected), which a person typing does without noticing.
 */
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { freePort } from '@herald/testkit';

const repo = fileURLToPath(new URL('../../', import.meta.url));
const page = readFileSync(join(repo, 'docs/hub.md'), 'utf8');

/** The sh block right after the `<!-- quick-start… -->` marker. */
export function quickStartBlock(markdown: string): string {
  const match = /<!-- quick-start[^>]*-->\s*```sh\n([\s\S]*?)```/.exec(markdown);
  assert.ok(match, 'docs/hub.md has no quick-start block');
  return match[1] as string;
}

/** The block as bash runs it: the build left out, the port replaced, waits after `&` lines. */
function runnable(block: string, port: number): string {
  const lines = block.replaceAll('8080', String(port)).split('\n');
  const out: string[] = [
    'set -e',
    `__wait_hub() { until curl -sf "http://127.0.0.1:${port}/healthz" >/dev/null; do sleep 0.1; done; }`,
    `__wait_subscriber() { until curl -s "http://127.0.0.1:${port}/metrics" | grep -Eq '^mercure_subscribers_connected(\\{[^}]*\\})? [1-9]'; do sleep 0.1; done; }`,
  ];
  let command = '';
  for (const line of lines) {
    if (line.trim() === 'npm ci && npm run build') continue;
    out.push(line);
    command += line;
    if (line.endsWith('\\')) continue;
    if (/&\s*$/.test(command)) out.push(/herald hub/.test(command) ? '__wait_hub' : '__wait_subscriber');
    command = '';
  }
  return out.join('\n');
}

// The timeout turns a quick start that never delivers (a hub that does not come up) into a failure.
test('the hub quick start in docs/hub.md: the subscriber receives the update published with the token', {
  timeout: 120_000,
}, async () => {
  const block = quickStartBlock(page);
  assert.match(block, /^npm ci && npm run build$/m, 'the block starts from a fresh clone');
  const port = await freePort();
  const { REDIS_URL: _unset, ...inherited } = process.env;
  // Its own process group: the hub and the subscriber left in the background are stopped with it.
  const child = spawn('bash', ['-c', runnable(block, port)], {
    cwd: repo,
    // The hub's default port is 8080; PORT moves it with the URLs above.
    env: { ...inherited, PORT: String(port) },
    detached: true,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stdout = '';
  let stderr = '';
  child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
  child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
  try {
    // bash ends after the publish (its answer printed); the subscriber prints the event.
    const [code] = (await once(child, 'exit')) as [number | null];
    assert.equal(code, 0, `the quick start failed:\n${stdout}\n${stderr}`);
    while (!stdout.includes('data: {"title":"Dune"}')) await once(child.stdout, 'data');
    // The publish answered the update's id, and the subscriber got that very id.
    const id = /id: (urn:uuid:[0-9a-f-]+)$/m.exec(stdout)?.[1];
    assert.ok(id, `the subscriber printed no event id:\n${stdout}`);
    assert.equal(stdout.split(id).length - 1, 2, `the publish did not answer ${id}:\n${stdout}`);
  } finally {
    process.kill(-(child.pid as number), 'SIGTERM');
  }
});

/*
 * `npm start` (scripts/start.mjs), issue #13 "the first hour": the banner comes only once both
 * services listen and names the console; SIGTERM/SIGINT stop hub and broker (no orphans), also
 * when the shell between npm and the script is the one that gets the signal; a service that fails
 * to bind stops the other, and no banner is printed. Needs the services built (dist/).
 */
import assert from 'node:assert/strict';
import { type ChildProcess, spawn } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { join } from 'node:path';
import { test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { freePort, waitFor } from '@herald/testkit';

const repo = fileURLToPath(new URL('../../', import.meta.url));
const script = join(repo, 'scripts', 'start.mjs');

/** Pids of the live processes whose parent is `pid` (Linux /proc). */
function childrenOf(pid: number): number[] {
  const found: number[] = [];
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const stat = readFileSync(`/proc/${entry}/stat`, 'utf8');
      // Fields after the command name `(…)`: state, ppid, …
      const [, ppid] = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
      if (Number(ppid) === pid) found.push(Number(entry));
    } catch {
      // The process ended while the folder was read.
    }
  }
  return found;
}

/** Whether a process still exists and is not a zombie waiting to be reaped. */
function alive(pid: number): boolean {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    return stat.slice(stat.lastIndexOf(')') + 2)[0] !== 'Z';
  } catch {
    return false;
  }
}

interface Started {
  readonly child: ChildProcess;
  output(): string;
  exited: Promise<number | null>;
}

function start(command: string, args: string[], env: Record<string, string>): Started {
  const { REDIS_URL: _unset, ...inherited } = process.env;
  const child = spawn(command, args, {
    cwd: repo,
    env: { ...inherited, ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let output = '';
  child.stdout?.on('data', (chunk: Buffer) => (output += chunk.toString()));
  child.stderr?.on('data', (chunk: Buffer) => (output += chunk.toString()));
  const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)));
  return { child, output: () => output, exited };
}

async function bannerOf(started: Started): Promise<string> {
  return new Promise((resolve, reject) => {
    const check = () => {
      const text = started.output();
      if (text.includes('Ctrl-C stops both')) resolve(text);
    };
    started.child.stdout?.on('data', check);
    started.exited.then((code) => reject(new Error(`exited with ${code}: ${started.output()}`)));
  });
}

for (const signal of ['SIGTERM', 'SIGINT'] as const) {
  test(`node scripts/start.mjs: banner after both listen; ${signal} stops hub and broker`, async () => {
    const [hubPort, brokerPort] = [await freePort(), await freePort()];
    const started = start(process.execPath, [script], {
      HUB_PORT: String(hubPort),
      BROKER_PORT: String(brokerPort),
    });
    const banner = await bannerOf(started);
    assert.match(banner, new RegExp(`console +http://127\\.0\\.0\\.1:${brokerPort}/console/`));
    assert.match(banner, new RegExp(`hub +http://127\\.0\\.0\\.1:${hubPort}/\\.well-known/mercure`));
    // Both answer by the time the banner is out.
    for (const port of [hubPort, brokerPort]) {
      assert.equal((await fetch(`http://127.0.0.1:${port}/healthz`)).status, 200);
    }
    const services = childrenOf(started.child.pid as number);
    assert.equal(services.length, 2, `expected hub and broker under start.mjs, found ${services.join(', ')}`);
    started.child.kill(signal);
    assert.equal(await started.exited, 0, started.output());
    assert.deepEqual(services.filter(alive), [], 'hub or broker outlived npm start');
  });
}

// The timeout turns a service left running (the old behaviour) into a failure instead of a hang.
test('sh -c "node scripts/start.mjs" (what npm runs): SIGTERM to the shell leaves no service behind', {
  timeout: 60_000,
}, async (t) => {
  const [hubPort, brokerPort] = [await freePort(), await freePort()];
  // dash keeps the shell as the parent here: npm forwards SIGTERM to it, and it dies alone.
  const started = start('sh', ['-c', `"${process.execPath}" "${script}"; true`], {
    HUB_PORT: String(hubPort),
    BROKER_PORT: String(brokerPort),
  });
  await bannerOf(started);
  const [supervisor] = childrenOf(started.child.pid as number);
  assert.ok(supervisor !== undefined, 'start.mjs not found under the shell');
  const services = childrenOf(supervisor);
  assert.equal(services.length, 2);
  t.after(() => {
    for (const pid of [supervisor, ...services]) if (alive(pid)) process.kill(pid, 'SIGKILL');
  });
  started.child.kill('SIGTERM');
  await started.exited;
  // start.mjs sees it was re-parented and stops both; then it exits itself. They are not this
  // process's children (no exit event reaches it): /proc is polled; the deadline only catches a
  // process that never exits.
  await waitFor(() => !alive(supervisor) && !services.some(alive), {
    timeoutMs: 30_000,
    intervalMs: 100,
    what: `start.mjs (${supervisor}) and its services (${services.join(', ')}) to exit`,
  });
  assert.deepEqual(services.filter(alive), []);
});

test('a service that cannot bind: the other is stopped, no banner, exit 1', async () => {
  const blocker = createServer();
  const hubPort = await freePort();
  await new Promise<void>((resolve) => blocker.listen(hubPort, '127.0.0.1', resolve));
  try {
    const started = start(process.execPath, [script], {
      HUB_PORT: String(hubPort),
      BROKER_PORT: String(await freePort()),
    });
    const code = await started.exited;
    assert.equal(code, 1, started.output());
    assert.doesNotMatch(started.output(), /Herald is running|Ctrl-C stops both/);
    assert.match(started.output(), /hub exited/);
  } finally {
    await new Promise((resolve) => blocker.close(resolve));
  }
});

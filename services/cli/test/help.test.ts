/*
 * Issue #13, "the first hour": every command has help and a version, and `--help` never starts
 * anything. The CLI is spawned as an operator runs it (bin/herald.js from dist/), with a port
 * that a started node would bind: a test fails if `herald hub --help` listens there.
 */
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { test } from 'node:test';
import { fileURLToPath } from 'node:url';

const herald = fileURLToPath(new URL('../bin/herald.js', import.meta.url));
const version = (
  JSON.parse(readFileSync(new URL('../package.json', import.meta.url), 'utf8')) as { version: string }
).version;

async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const address = server.address();
  await new Promise<void>((resolve) => server.close(() => resolve()));
  if (address === null || typeof address === 'string') throw new Error('no port');
  return address.port;
}

/** Runs the CLI to its exit. */
async function run(argv: string[], environment: Record<string, string> = {}) {
  const { REDIS_URL: _unset, ...inherited } = process.env;
  const child = spawn(process.execPath, [herald, ...argv], {
    env: { ...inherited, HOST: '127.0.0.1', ...environment },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stdout = '';
  let stderr = '';
  // A node that started logs "listening" and would never exit: stop it, the assertions then fail.
  const stopIfListening = () => {
    if (/listening/.test(stdout + stderr)) child.kill('SIGKILL');
  };
  child.stdout.on('data', (chunk: Buffer) => {
    stdout += chunk.toString();
    stopIfListening();
  });
  child.stderr.on('data', (chunk: Buffer) => {
    stderr += chunk.toString();
    stopIfListening();
  });
  const code = await new Promise<number | null>((resolve) => child.on('close', resolve));
  return { code, stdout, stderr };
}

test('herald token --help and -h print the token help on stdout, rc 0', async () => {
  for (const flag of ['--help', '-h']) {
    const { code, stdout, stderr } = await run(['token', flag]);
    assert.equal(code, 0, `${flag}: ${stderr}`);
    assert.match(stdout, /^Usage: herald token/, flag);
    assert.match(stdout, /--secret <s>/, flag);
    assert.equal(stderr, '', flag);
  }
});

test('--version and -v print the package version, for the CLI and for every command', async () => {
  for (const argv of [
    ['--version'],
    ['-v'],
    ['token', '--version'],
    ['hub', '--version'],
    ['broker', '-v'],
  ]) {
    const { code, stdout } = await run(argv);
    assert.equal(code, 0, argv.join(' '));
    assert.equal(stdout, `herald ${version}\n`, argv.join(' '));
  }
});

test('herald hub --help and herald broker --help print their variables and start nothing', async () => {
  for (const command of ['hub', 'broker']) {
    const port = await freePort();
    // A publisher key, so that a hub that did start would start rather than fail on config.
    const { code, stdout } = await run([command, '--help'], {
      PORT: String(port),
      MERCURE_PUBLISHER_JWT_KEY: 'test-secret',
    });
    assert.equal(code, 0, command);
    assert.match(stdout, new RegExp(`^Usage: herald ${command}`), command);
    assert.match(stdout, /PORT +default/, command);
    assert.doesNotMatch(stdout, /listening/, command);
    // Nothing is bound on the port a node would have taken.
    const probe = createServer();
    await new Promise<void>((resolve, reject) => {
      probe.once('error', reject);
      probe.listen(port, '127.0.0.1', resolve);
    });
    await new Promise<void>((resolve) => probe.close(() => resolve()));
  }
  const hub = await run(['hub', '-h']);
  assert.match(hub.stdout, /MERCURE_PUBLISHER_JWT_KEY/);
  const broker = await run(['help', 'broker']);
  assert.match(broker.stdout, /JWT_ENABLED/);
});

test('herald --help lists the commands; an unknown command or a hub argument is refused with rc 1', async () => {
  const help = await run(['--help']);
  assert.equal(help.code, 0);
  for (const command of ['hub', 'broker', 'token'])
    assert.match(help.stdout, new RegExp(`^  ${command} `, 'm'));
  const unknown = await run(['hbu']);
  assert.equal(unknown.code, 1);
  assert.match(unknown.stderr, /unknown command "hbu"/);
  const argument = await run(['broker', '--port', '1'], { PORT: '0' });
  assert.equal(argument.code, 1);
  assert.match(argument.stderr, /takes no arguments/);
});

test('a token option error names the help', async () => {
  const { code, stderr } = await run(['token', '--secrett', 'x']);
  assert.equal(code, 1);
  assert.match(stderr, /Unknown option '--secrett'.*herald token --help/);
});

import { type ChildProcess, execFile, spawn, spawnSync } from 'node:child_process';
import { once } from 'node:events';
import { readFileSync } from 'node:fs';
import { connect } from 'node:net';
import { connect as connectTls } from 'node:tls';
import { type RedisAccess, redisCliAccess } from './redis-security.js';
import { waitFor } from './wait.js';

export const redisServerMissingMessage =
  'redis-server is not installed and REDIS_URL is not set: install it with `apt-get install redis-server` (Redis 7) or point REDIS_URL at a Redis';

export function redisServerAvailable(): boolean {
  return spawnSync('redis-server', ['--version'], { stdio: 'ignore' }).status === 0;
}

/**
 * True when the server on `port` answers PING with PONG, as `default` (keep PING allowed to it);
 * with `caFile`, on its TLS port, its certificate verified for `localhost`.
 */
export function pingPort(port: number, { caFile }: RedisAccess = {}): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = caFile
      ? connectTls({ port, host: '127.0.0.1', servername: 'localhost', ca: readFileSync(caFile) })
      : connect(port, '127.0.0.1');
    let reply = '';
    socket.setTimeout(500);
    socket.on(caFile ? 'secureConnect' : 'connect', () => socket.write('PING\r\n'));
    socket.on('data', (chunk) => {
      reply += chunk.toString();
      if (reply.includes('\r\n')) {
        socket.destroy();
        resolve(reply.startsWith('+PONG'));
      }
    });
    socket.on('error', () => resolve(false));
    socket.on('timeout', () => {
      socket.destroy();
      resolve(false);
    });
  });
}

/**
 * One command through `redis-cli` (raw output, one line per reply element), so the harness
 * needs no Redis client library at run time. Rejects when redis-cli fails or takes over 2 s.
 */
export function redisCli(port: number, ...args: readonly string[]): Promise<string> {
  return redisCliAs({}, port, ...args);
}

/** `redisCli` on a server that takes TLS only or an ACL user (`access`). */
export function redisCliAs(access: RedisAccess, port: number, ...args: readonly string[]): Promise<string> {
  const cli = redisCliAccess(access);
  return new Promise((resolve, reject) => {
    execFile(
      'redis-cli',
      ['-h', '127.0.0.1', '-p', String(port), ...cli.args, '--raw', ...args],
      { timeout: 2000, encoding: 'utf8', env: { ...process.env, ...cli.env } },
      (error, stdout) => (error ? reject(error) : resolve(stdout)),
    );
  });
}

/** `field:value` lines of INFO or CLUSTER INFO as a map. */
export function infoFields(text: string): Map<string, string> {
  const fields = new Map<string, string>();
  for (const line of text.split(/\r?\n/)) {
    const separator = line.indexOf(':');
    if (separator > 0) fields.set(line.slice(0, separator), line.slice(separator + 1).trim());
  }
  return fields;
}

const liveChildren = new Set<ChildProcess>();
process.on('exit', () => {
  for (const child of liveChildren) child.kill('SIGKILL');
});

/**
 * One `redis-server` process (a server or a sentinel) on a fixed port, relaunchable with the
 * same arguments. A foreground child (not --daemonize) so it dies with the test process, even
 * on a crash.
 */
export class RedisProcess {
  private child: ChildProcess | undefined;

  constructor(
    readonly port: number,
    private readonly args: readonly string[],
    /** How `launch` pings it: its CA when it listens on TLS only. */
    private readonly access: RedisAccess = {},
  ) {}

  /** True while the process runs (not killed, not exited). */
  get running(): boolean {
    return this.child !== undefined && this.child.exitCode === null && this.child.signalCode === null;
  }

  async launch(): Promise<void> {
    const child = spawn('redis-server', [...this.args], { stdio: 'ignore' });
    child.unref();
    this.child = child;
    liveChildren.add(child);
    child.once('exit', () => liveChildren.delete(child));
    await waitFor(() => child.exitCode === null && pingPort(this.port, this.access), {
      what: `redis-server on port ${this.port}`,
    });
  }

  async waitExit(): Promise<void> {
    const child = this.child;
    if (!child || child.exitCode !== null || child.signalCode !== null) return;
    // Hold the event loop open while waiting: the child is unref'd, and with nothing else
    // pending the test process would end before 'exit' arrives.
    child.ref();
    await once(child, 'exit');
  }

  /** Sends `signal` (SIGKILL: a crash; SIGSTOP: a stall) and, unless stopping, waits for the exit. */
  async kill(signal: NodeJS.Signals = 'SIGKILL'): Promise<void> {
    this.child?.kill(signal);
    if (signal !== 'SIGSTOP' && signal !== 'SIGCONT') await this.waitExit();
  }
}

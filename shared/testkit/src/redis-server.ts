import { type ChildProcess, spawn, spawnSync } from 'node:child_process';
import { once } from 'node:events';
import { mkdtempSync, rmSync } from 'node:fs';
import { connect } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { freePort } from './ports.js';
import { waitFor } from './wait.js';

export const redisServerMissingMessage =
  'redis-server is not installed and REDIS_URL is not set: install it with `apt-get install redis-server` (Redis 7) or point REDIS_URL at a Redis';

export interface RedisServerOptions {
  /** Durable mode for fault tests: `appendonly yes` with `appendfsync always`. */
  readonly appendOnly?: boolean;
  readonly port?: number;
}

function redisServerAvailable(): boolean {
  return spawnSync('redis-server', ['--version'], { stdio: 'ignore' }).status === 0;
}

function pingPort(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = connect(port, '127.0.0.1');
    let reply = '';
    socket.setTimeout(500);
    socket.on('connect', () => socket.write('PING\r\n'));
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
 * A private `redis-server` on a free port, for tests that must stop, kill or restart Redis.
 * The data directory is kept across restarts so durability can be observed.
 */
export class RedisServer {
  readonly directory = mkdtempSync(join(tmpdir(), 'herald-redis-'));
  private child: ChildProcess | undefined;
  private constructor(
    readonly port: number,
    private readonly options: RedisServerOptions,
  ) {}

  static async start(options: RedisServerOptions = {}): Promise<RedisServer> {
    if (!redisServerAvailable()) throw new Error(redisServerMissingMessage);
    const server = new RedisServer(options.port ?? (await freePort()), options);
    await server.launch();
    return server;
  }

  get url(): string {
    return `redis://127.0.0.1:${this.port}`;
  }

  async launch(): Promise<void> {
    const durability = this.options.appendOnly
      ? ['--appendonly', 'yes', '--appendfsync', 'always']
      : ['--appendonly', 'no'];
    // A foreground child (not --daemonize) so it dies with the test process, even on a crash.
    const child = spawn(
      'redis-server',
      [
        '--port',
        String(this.port),
        '--bind',
        '127.0.0.1',
        '--save',
        '',
        ...durability,
        '--dir',
        this.directory,
        '--logfile',
        join(this.directory, 'log'),
      ],
      { stdio: 'ignore' },
    );
    child.unref();
    this.child = child;
    liveChildren.add(child);
    child.once('exit', () => liveChildren.delete(child));
    await waitFor(() => child.exitCode === null && pingPort(this.port), {
      what: `redis-server on port ${this.port}`,
    });
  }

  private async waitExit(child: ChildProcess | undefined): Promise<void> {
    if (!child || child.exitCode !== null || child.signalCode !== null) return;
    // Hold the event loop open while waiting: the child is unref'd, and with nothing else
    // pending the test process would end before 'exit' arrives.
    child.ref();
    await once(child, 'exit');
  }

  /** Graceful stop (SHUTDOWN NOSAVE: only what append-only mode already wrote survives). */
  async stop(): Promise<void> {
    const child = this.child;
    spawnSync('redis-cli', ['-p', String(this.port), 'shutdown', 'nosave'], { stdio: 'ignore' });
    await this.waitExit(child);
  }

  /** SIGKILL: a crash, nothing flushed beyond what `appendfsync` already made durable. */
  async kill(): Promise<void> {
    const child = this.child;
    child?.kill('SIGKILL');
    await this.waitExit(child);
  }

  async restart(): Promise<void> {
    await this.stop();
    await this.launch();
  }

  async destroy(): Promise<void> {
    await this.kill();
    rmSync(this.directory, { recursive: true, force: true });
  }
}

const liveChildren = new Set<ChildProcess>();
process.on('exit', () => {
  for (const child of liveChildren) child.kill('SIGKILL');
});

import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { freePort } from './ports.js';
import { RedisProcess, redisServerAvailable, redisServerMissingMessage } from './redis-process.js';

export { redisServerMissingMessage };

export interface RedisServerOptions {
  /** Durable mode for fault tests: `appendonly yes` with `appendfsync always`. */
  readonly appendOnly?: boolean;
  readonly port?: number;
  /**
   * More `redis-server` arguments (TLS ports and files, ACL users). The harness checks the
   * server on its plain port with an unauthenticated PING: keep that allowed to `default`.
   */
  readonly extraArguments?: readonly string[];
}

/**
 * A private `redis-server` on a free port, for tests that must stop, kill or restart Redis.
 * The data directory is kept across restarts so durability can be observed.
 */
export class RedisServer {
  readonly directory = mkdtempSync(join(tmpdir(), 'herald-redis-'));
  private process: RedisProcess | undefined;
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
    this.process = new RedisProcess(this.port, [
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
      ...(this.options.extraArguments ?? []),
    ]);
    await this.process.launch();
  }

  /** Graceful stop (SHUTDOWN NOSAVE: only what append-only mode already wrote survives). */
  async stop(): Promise<void> {
    spawnSync('redis-cli', ['-p', String(this.port), 'shutdown', 'nosave'], { stdio: 'ignore' });
    await this.process?.waitExit();
  }

  /** SIGKILL: a crash, nothing flushed beyond what `appendfsync` already made durable. */
  async kill(): Promise<void> {
    await this.process?.kill('SIGKILL');
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

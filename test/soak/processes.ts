import { type ChildProcess, spawn } from 'node:child_process';
import { once } from 'node:events';
import { freePort, waitFor } from '@herald/testkit';

const liveChildren = new Set<ChildProcess>();
process.on('exit', () => {
  for (const child of liveChildren) child.kill('SIGKILL');
});

/** How much of a node's log is kept for failure messages (its last lines matter). */
const LOG_TAIL_CHARS = 20_000;

/**
 * One service node (`node <main.js>`) as an operator runs it, on a port it keeps across
 * restarts so clients can go on addressing it after a crash, as behind a fixed Service address.
 */
export class ServiceNode {
  private child: ChildProcess | undefined;
  private log = '';
  /** Exit code or signal of each run that ended, in order (`0` after a clean SIGTERM). */
  readonly exits: string[] = [];

  private constructor(
    readonly name: string,
    private readonly main: string,
    private readonly environment: Record<string, string>,
    readonly port: number,
  ) {}

  static async start(name: string, main: string, environment: Record<string, string>): Promise<ServiceNode> {
    const node = new ServiceNode(name, main, environment, await freePort());
    await node.launch();
    return node;
  }

  get origin(): string {
    return `http://127.0.0.1:${this.port}`;
  }

  /** The tail of what the node wrote to stdout and stderr over all its runs. */
  logTail(): string {
    return this.log;
  }

  async launch(): Promise<void> {
    const child = spawn(process.execPath, [this.main], {
      env: { PATH: process.env.PATH ?? '', PORT: String(this.port), HOST: '127.0.0.1', ...this.environment },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    const keep = (chunk: Buffer) => {
      this.log = (this.log + chunk.toString()).slice(-LOG_TAIL_CHARS);
    };
    child.stdout?.on('data', keep);
    child.stderr?.on('data', keep);
    liveChildren.add(child);
    child.once('exit', (code, signal) => {
      liveChildren.delete(child);
      this.exits.push(signal ?? String(code));
    });
    this.child = child;
    await this.waitReady();
  }

  async waitReady(timeoutMs = 60_000): Promise<void> {
    const child = this.child;
    await waitFor(
      async () => {
        if (!child || child.exitCode !== null) throw new Error(`${this.name} exited with ${child?.exitCode}`);
        return (await fetch(`${this.origin}/readyz`)).status === 200;
      },
      { what: `${this.name} ready on port ${this.port}`, timeoutMs, intervalMs: 100 },
    ).catch((error: Error) => {
      throw new Error(`${error.message}\n--- ${this.name} log tail ---\n${this.log}`);
    });
  }

  private async signal(signal: NodeJS.Signals): Promise<void> {
    const child = this.child;
    if (!child || child.exitCode !== null || child.signalCode !== null) return;
    child.kill(signal);
    await once(child, 'exit');
  }

  /** A crash: nothing in flight is answered, nothing is cleaned up. */
  kill9(): Promise<void> {
    return this.signal('SIGKILL');
  }

  /** A rolling restart's stop: the node drains and exits on its own. */
  sigterm(): Promise<void> {
    return this.signal('SIGTERM');
  }

  async stop(): Promise<void> {
    await this.sigterm();
  }
}

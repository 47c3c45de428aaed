// Starts a built service entry point (`services/<name>/dist/main.js`) as a child process on a
// free port and waits until it answers /healthz. Used by the tests that need real nodes; they
// fail with a clear message while the services are not built.

import { type ChildProcess, spawn } from 'node:child_process';
import { once } from 'node:events';
import { existsSync } from 'node:fs';
import { join } from 'node:path';

export type ServiceName = 'hub' | 'broker';

export function entryPoint(root: string, service: ServiceName): string {
  return join(root, 'services', service, 'dist', 'main.js');
}

/**
 * The hub's environment for these tests: development mode (the tests' brief), plus the publisher
 * key the hub requires even then. No REDIS_URL anywhere: the in-process backend.
 */
export const hubTestEnvironment: Readonly<Record<string, string>> = {
  MERCURE_DEV: '1',
  MERCURE_PUBLISHER_JWT_KEY: 'helm-test-publisher-key-not-a-secret-0123456789',
};

export interface RunningService {
  readonly name: ServiceName;
  readonly baseUrl: string;
  output(): string;
  stop(): Promise<void>;
}

export interface StartOptions {
  /** Directory holding `services/<name>/dist/main.js` (the repo, or a staged production tree). */
  readonly root: string;
  readonly service: ServiceName;
  /** Variables on top of a minimal environment (PATH, HOME, PORT, HOST). */
  readonly env?: Readonly<Record<string, string>>;
  readonly startTimeoutMs?: number;
}

/**
 * A minimal environment on purpose: inheriting the test runner's environment could pass a
 * REDIS_URL (the tests want the in-process backend) or stray MERCURE_/JWT_ variables, which the
 * services reject as unknown settings.
 */
function baseEnvironment(port: number): Record<string, string> {
  const env: Record<string, string> = { PORT: String(port), HOST: '127.0.0.1', LOG_LEVEL: 'warn' };
  for (const name of ['PATH', 'HOME', 'TMPDIR', 'SYSTEMROOT']) {
    const value = process.env[name];
    if (value !== undefined) env[name] = value;
  }
  return env;
}

export async function startService(options: StartOptions): Promise<RunningService> {
  const script = entryPoint(options.root, options.service);
  if (!existsSync(script)) {
    throw new Error(`${script} does not exist: build the services first (npm run build)`);
  }
  // Imported here, after the check above, so an unbuilt workspace reports the missing entry point.
  const { freePort, waitFor } = await import('@herald/testkit');
  const port = await freePort();
  const baseUrl = `http://127.0.0.1:${port}`;
  const child: ChildProcess = spawn(process.execPath, [script], {
    cwd: options.root,
    env: { ...baseEnvironment(port), ...options.env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let output = '';
  child.stdout?.on('data', (chunk: Buffer) => {
    output += chunk.toString();
  });
  child.stderr?.on('data', (chunk: Buffer) => {
    output += chunk.toString();
  });
  const exited = once(child, 'exit');

  const service: RunningService = {
    name: options.service,
    baseUrl,
    output: () => output,
    async stop() {
      if (child.exitCode !== null || child.signalCode !== null) return;
      const killTimer = setTimeout(() => child.kill('SIGKILL'), 15_000);
      child.kill('SIGTERM');
      await exited;
      clearTimeout(killTimer);
    },
  };

  // A process that exits during start-up (e.g. a configuration error) fails the start at once.
  const exitedEarly = exited.then(([code, signal]) => {
    throw new Error(`${options.service} exited (${code ?? signal}) before answering /healthz`);
  });
  exitedEarly.catch(() => undefined); // handled by the race below; later exits are expected

  try {
    await Promise.race([
      exitedEarly,
      waitFor(
        async () => {
          const response = await fetch(`${baseUrl}/healthz`);
          await response.arrayBuffer();
          return response.status === 200;
        },
        {
          timeoutMs: options.startTimeoutMs ?? 20_000,
          intervalMs: 100,
          what: `${options.service} /healthz on ${baseUrl}`,
        },
      ),
    ]);
  } catch (error) {
    await service.stop();
    const message = error instanceof Error ? error.message : String(error);
    throw new Error(`${message}\n--- ${options.service} output ---\n${output}`);
  }
  return service;
}

/** Names with a `# HELP` line in a Prometheus text exposition, mapped to their `# TYPE`. */
export function exportedMetrics(exposition: string): Map<string, string> {
  const help = new Set<string>();
  const types = new Map<string, string>();
  for (const line of exposition.split('\n')) {
    const helpMatch = /^# HELP ([a-zA-Z_:][a-zA-Z0-9_:]*) /.exec(line);
    if (helpMatch?.[1]) help.add(helpMatch[1]);
    const typeMatch = /^# TYPE ([a-zA-Z_:][a-zA-Z0-9_:]*) (\w+)/.exec(line);
    if (typeMatch?.[1] && typeMatch[2]) types.set(typeMatch[1], typeMatch[2]);
  }
  return new Map([...help].map((name) => [name, types.get(name) ?? 'untyped']));
}

/**
 * Whether a series name used in a query is exported: the name itself, or for `_bucket` a
 * histogram base, for `_sum`/`_count` a histogram or summary base.
 */
export function isExported(series: string, exported: ReadonlyMap<string, string>): boolean {
  if (exported.has(series)) return true;
  const suffix = /_(bucket|sum|count)$/.exec(series);
  if (!suffix) return false;
  const type = exported.get(series.slice(0, -suffix[0].length));
  return suffix[1] === 'bucket' ? type === 'histogram' : type === 'histogram' || type === 'summary';
}

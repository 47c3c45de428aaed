import { type ChildProcess, spawn } from 'node:child_process';
import { once } from 'node:events';
import { existsSync, readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { freePort, waitFor } from '@herald/testkit';
import { PUBLISHER_SECRET, SUBSCRIBER_SECRET } from '../../services/hub/test/helpers.js';

export {
  PUBLISHER_SECRET,
  publisherToken,
  SUBSCRIBER_SECRET,
  signToken,
  subscriberToken,
} from '../../services/hub/test/helpers.js';

const MAINS = {
  hub: fileURLToPath(new URL('../../services/hub/dist/main.js', import.meta.url)),
  broker: fileURLToPath(new URL('../../services/broker/dist/main.js', import.meta.url)),
} as const;

export type Service = keyof typeof MAINS;

/** The broker's HS256 secret in these tests. */
export const BROKER_SECRET = 'broker-secret-for-security-tests-0123456789';

/** A service node as the operator runs it (`node services/<name>/dist/main.js`), log captured. */
export interface ServiceNode {
  readonly service: Service;
  readonly port: number;
  readonly origin: string;
  readonly child: ChildProcess;
  /** Everything the node wrote to stdout and stderr so far (its JSON log). */
  output(): string;
  /** The node is still running (no exit, no signal). */
  alive(): boolean;
  /** Resident set size in bytes, read from /proc (Linux); undefined elsewhere. */
  rssBytes(): number | undefined;
  stop(): Promise<void>;
}

const live = new Set<ChildProcess>();
process.on('exit', () => {
  for (const child of live) child.kill('SIGKILL');
});

const DEFAULTS: Record<Service, Record<string, string>> = {
  hub: {
    TRUSTED_PROXIES: '127.0.0.1',
    MERCURE_PUBLISHER_JWT_KEY: PUBLISHER_SECRET,
    MERCURE_SUBSCRIBER_JWT_KEY: SUBSCRIBER_SECRET,
  },
  broker: {},
};

export async function startNode(
  service: Service,
  environment: Record<string, string>,
  options: { readonly waitReady?: boolean } = {},
): Promise<ServiceNode> {
  const main = MAINS[service];
  if (!existsSync(main)) throw new Error(`${main} is missing: run \`npm run build\` first`);
  const port = await freePort();
  const child = spawn(process.execPath, [main], {
    env: {
      PATH: process.env.PATH ?? '',
      PORT: String(port),
      HOST: '127.0.0.1',
      LOG_LEVEL: 'warn',
      ...DEFAULTS[service],
      ...environment,
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  live.add(child);
  const chunks: string[] = [];
  child.stdout?.setEncoding('utf8').on('data', (chunk: string) => chunks.push(chunk));
  child.stderr?.setEncoding('utf8').on('data', (chunk: string) => chunks.push(chunk));
  const exited = once(child, 'exit').then(() => live.delete(child));
  const origin = `http://127.0.0.1:${port}`;
  const node: ServiceNode = {
    service,
    port,
    origin,
    child,
    output: () => chunks.join(''),
    alive: () => child.exitCode === null && child.signalCode === null,
    rssBytes() {
      try {
        const status = readFileSync(`/proc/${child.pid}/status`, 'utf8');
        const kib = /VmRSS:\s+(\d+) kB/.exec(status)?.[1];
        return kib === undefined ? undefined : Number(kib) * 1024;
      } catch {
        return undefined;
      }
    },
    async stop() {
      if (!node.alive()) return;
      child.kill('SIGTERM');
      await exited;
    },
  };
  await waitFor(
    async () => {
      if (!node.alive()) throw new Error(`${service} exited during start:\n${node.output()}`);
      try {
        const { status } = await fetch(`${origin}/readyz`);
        return options.waitReady === false || status === 200;
      } catch {
        return false;
      }
    },
    {
      what: `${service} on port ${port} to ${options.waitReady === false ? 'answer /readyz' : 'be ready'}`,
      timeoutMs: 20_000,
    },
  );
  return node;
}

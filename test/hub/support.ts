import { type ChildProcess, spawn } from 'node:child_process';
import { once } from 'node:events';
import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { freePort, waitFor } from '@herald/testkit';
import { PUBLISHER_SECRET, SUBSCRIBER_SECRET } from '../../services/hub/test/helpers.js';

export {
  publish,
  publisherToken,
  publishOk,
  SECURE,
  SseStream,
  signToken,
  subscriberToken,
  subscribeUrl,
} from '../../services/hub/test/helpers.js';

export const HUB_MAIN = fileURLToPath(new URL('../../services/hub/dist/main.js', import.meta.url));

export interface HubProcess {
  readonly port: number;
  readonly origin: string;
  readonly url: string;
  readonly child: ChildProcess;
  readonly exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
  /** Everything the node wrote to stdout/stderr (its JSON log), for failure messages. */
  readonly output: () => string;
  isReady(): Promise<boolean>;
  stop(): Promise<void>;
}

const liveNodes = new Set<ChildProcess>();
process.on('exit', () => {
  for (const child of liveNodes) child.kill('SIGKILL');
});

/**
 * Starts `node services/hub/dist/main.js` (built by `npm run build`) as a child process and
 * resolves once it answers /readyz with 200.
 */
export async function spawnHub(
  environment: Record<string, string>,
  options: { waitReady?: boolean; nodeArguments?: readonly string[] } = {},
): Promise<HubProcess> {
  if (!existsSync(HUB_MAIN)) throw new Error(`${HUB_MAIN} is missing: run \`npm run build\` first`);
  const port = Number(environment.PORT ?? (await freePort()));
  const child = spawn(process.execPath, [...(options.nodeArguments ?? []), HUB_MAIN], {
    env: {
      PATH: process.env.PATH ?? '',
      PORT: String(port),
      HOST: '127.0.0.1',
      LOG_LEVEL: 'warn',
      TRUSTED_PROXIES: '127.0.0.1',
      MERCURE_PUBLISHER_JWT_KEY: PUBLISHER_SECRET,
      MERCURE_SUBSCRIBER_JWT_KEY: SUBSCRIBER_SECRET,
      ...environment,
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  liveNodes.add(child);
  let output = '';
  child.stdout?.on('data', (chunk: Buffer) => {
    output += chunk.toString();
  });
  child.stderr?.on('data', (chunk: Buffer) => {
    output += chunk.toString();
  });
  const exited = once(child, 'exit').then(([code, signal]) => {
    liveNodes.delete(child);
    return { code: code as number | null, signal: signal as NodeJS.Signals | null };
  });
  const origin = `http://127.0.0.1:${port}`;
  const node: HubProcess = {
    port,
    origin,
    url: `${origin}/.well-known/mercure`,
    child,
    exited,
    output: () => output,
    async isReady() {
      try {
        return (await fetch(`${origin}/readyz`)).status === 200;
      } catch {
        return false;
      }
    },
    async stop() {
      if (child.exitCode !== null || child.signalCode !== null) return;
      child.kill('SIGTERM');
      await exited;
    },
  };
  if (options.waitReady !== false) {
    await waitFor(async () => child.exitCode === null && (await node.isReady()), {
      what: `hub node on port ${port} to be ready`,
      timeoutMs: 20_000,
    }).catch((error: Error) => {
      throw new Error(`${error.message}\n${output}`);
    });
  }
  return node;
}

import assert from 'node:assert/strict';
import { type ChildProcess, spawn } from 'node:child_process';
import { once } from 'node:events';
import { fileURLToPath } from 'node:url';
import { type Broker, brokerSpec, startBroker } from '@herald/broker';
import { parseEnv } from '@herald/config';
import { freePort, waitFor } from '@herald/testkit';

/** The HS256 secret of the in-process JWT brokers the auth tests start. */
export const JWT_TEST_SECRET = 'a-test-secret-of-at-least-32-bytes-long!!';

/** An in-process broker with JWT on (HS256, `JWT_TEST_SECRET`), silent. */
export function startJwtBroker(): Promise<Broker> {
  return startBroker(
    parseEnv(brokerSpec, {
      PORT: '0',
      HOST: '127.0.0.1',
      LOG_LEVEL: 'silent',
      JWT_ENABLED: 'true',
      JWT_ALGORITHM: 'HS256',
      JWT_SECRET: JWT_TEST_SECRET,
    }),
    { fastify: { logger: false } },
  );
}

export const MAIN = fileURLToPath(new URL('../../services/broker/dist/main.js', import.meta.url));

/** One broker node as the operator runs it: `node services/broker/dist/main.js`. */
export class BrokerNode {
  private constructor(
    readonly child: ChildProcess,
    readonly url: string,
  ) {}

  static async start(environment: Record<string, string>): Promise<BrokerNode> {
    const port = await freePort();
    const child = spawn(process.execPath, [MAIN], {
      env: {
        PATH: process.env.PATH ?? '',
        PORT: String(port),
        HOST: '127.0.0.1',
        LOG_LEVEL: 'warn',
        ...environment,
      },
      stdio: ['ignore', 'ignore', 'inherit'],
    });
    const node = new BrokerNode(child, `http://127.0.0.1:${port}`);
    await waitFor(
      async () => {
        if (child.exitCode !== null) throw new Error(`broker exited with ${child.exitCode}`);
        return (await fetch(`${node.url}/readyz`)).status === 200;
      },
      { what: `broker on port ${port}`, timeoutMs: 15_000 },
    );
    return node;
  }

  async stop(): Promise<void> {
    if (this.child.exitCode !== null || this.child.signalCode !== null) return;
    this.child.kill('SIGTERM');
    await once(this.child, 'exit');
  }
}

export async function call<T = any>(
  base: string,
  method: string,
  path: string,
  body?: unknown,
  signal?: AbortSignal,
): Promise<{ status: number; body: T }> {
  const response = await fetch(base + path, {
    method,
    ...(signal ? { signal } : {}),
    ...(body !== undefined
      ? { body: JSON.stringify(body), headers: { 'content-type': 'application/json' } }
      : {}),
  });
  const text = await response.text();
  return { status: response.status, body: (text ? JSON.parse(text) : undefined) as T };
}

/** Pushes `{ n: 1 }` to `queue` and pops it back through the node: the storage round trip works. */
export async function assertPushPop(url: string, queue: string): Promise<void> {
  const pushed = await call(url, 'POST', '/api/v1/push', {
    items: [{ queue, partition: 'p', payload: { n: 1 } }],
  });
  assert.equal(pushed.status, 201);
  const popped = await call<{ messages: { data: unknown }[] }>(
    url,
    'GET',
    `/api/v1/pop/queue/${queue}?batch=1`,
  );
  assert.equal(popped.status, 200);
  assert.deepEqual(
    popped.body.messages.map((message) => message.data),
    [{ n: 1 }],
  );
}

/*
 * One broker node as a child process of a benchmark (`services/broker/dist/main.js`: build
 * first), on the given Redis, answering once ready.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { freePort, waitFor } from '@herald/testkit';

const MAIN = fileURLToPath(new URL('../../services/broker/dist/main.js', import.meta.url));

export async function startBrokerChild(options: {
  redisUrl: string;
  /** Node flags before the script (BENCH_BROKER_ARGS). */
  nodeArguments?: readonly string[];
  /** Extra environment variables of the child (BENCH_BROKER_ENV), e.g. MALLOC_ARENA_MAX. */
  environment?: Readonly<Record<string, string>>;
}): Promise<{ child: ChildProcess; url: string }> {
  const port = await freePort();
  const child = spawn(process.execPath, [...(options.nodeArguments ?? []), MAIN], {
    env: {
      PATH: process.env.PATH ?? '',
      PORT: String(port),
      HOST: '127.0.0.1',
      LOG_LEVEL: 'error',
      REDIS_URL: options.redisUrl,
      ...options.environment,
    },
    stdio: ['ignore', 'ignore', 'inherit'],
  });
  const url = `http://127.0.0.1:${port}`;
  await waitFor(async () => (await fetch(`${url}/readyz`)).status === 200, { what: 'broker' });
  return { child, url };
}

/**
 * The `NAME=value` words of a list as environment variables (BENCH_BROKER_ENV, or the environment
 * words of a broker-memory.bench.ts set); other words are ignored.
 */
export function environmentFromWords(words: readonly string[]): Record<string, string> {
  return Object.fromEntries(
    words
      .filter((word) => word.includes('=') && !word.startsWith('-'))
      .map((word) => [word.slice(0, word.indexOf('=')), word.slice(word.indexOf('=') + 1)]),
  );
}

import { RedisServer } from './redis-server.js';

let shared: Promise<RedisServer> | undefined;

/**
 * The Redis URL a test should use: `REDIS_URL` when set, else a private redis-server started
 * once per test process on a free port. Isolate tests with `uniquePrefix()`.
 */
export async function testRedisUrl(): Promise<string> {
  const fromEnvironment = process.env.REDIS_URL;
  if (fromEnvironment) return fromEnvironment;
  shared ??= RedisServer.start();
  return (await shared).url;
}

/** Stops the private server started by testRedisUrl, if any. Call from an `after` hook. */
export async function stopTestRedis(): Promise<void> {
  if (!shared) return;
  const server = await shared;
  shared = undefined;
  await server.destroy();
}

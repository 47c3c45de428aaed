/*
 * Outage logging (issue #9, defect 9): one line when Redis is lost, one when it is back, however
 * many connections a node has and however many reconnect attempts fail in between.
 */
import assert from 'node:assert/strict';
import { once } from 'node:events';
import { after, test } from 'node:test';
import { freePort, logSink, RedisServer, waitFor } from '@herald/testkit';
import { pino } from 'pino';
import { createRedis, OutageLog, parseRedisOptions, type Redis, redisTarget } from '../src/index.js';

interface Line {
  level: 'warn' | 'info';
  details: Record<string, unknown>;
  message: string;
}

const cleanups: (() => Promise<void> | void)[] = [];
after(async () => {
  for (const cleanup of cleanups.reverse()) await cleanup();
});

function recorder(): { lines: Line[]; log: ConstructorParameters<typeof OutageLog>[0] } {
  const lines: Line[] = [];
  return {
    lines,
    log: {
      warn: (details, message) => lines.push({ level: 'warn', details: { ...details }, message }),
      info: (details, message) => lines.push({ level: 'info', details: { ...details }, message }),
    },
  };
}

function node(url: string, outages: OutageLog): Redis[] {
  return ['data', 'notify'].map((name) => {
    const redis = createRedis(parseRedisOptions(url, { connectionName: name }));
    outages.watch(redis, name);
    cleanups.push(() => redis.disconnect());
    return redis;
  });
}

test('an outage of two connections, many reconnect attempts long, costs one line lost and one back', async () => {
  const server = await RedisServer.start();
  cleanups.push(() => server.destroy());
  const { lines, log } = recorder();
  const outages = new OutageLog(log, redisTarget(server.url));
  const connections = node(server.url, outages);
  await Promise.all(connections.map((redis) => once(redis, 'ready')));
  assert.equal(lines.length, 0);

  await server.kill();
  // Several failed attempts per connection (backoff 100, 200, 400 ms ...).
  await waitFor(
    () => connections.every((redis) => (redis as unknown as { retryAttempts: number }).retryAttempts >= 4),
    {
      what: 'failed reconnect attempts',
    },
  );
  assert.equal(outages.down, true);
  await server.launch();
  await waitFor(() => connections.every((redis) => redis.status === 'ready'), { what: 'reconnect' });

  assert.deepEqual(
    lines.map((line) => [line.level, line.message]),
    [
      ['warn', `Redis at ${redisTarget(server.url)} lost; refusing requests that need it until it is back`],
      ['info', lines[1]?.message],
    ],
  );
  assert.match(lines[1]?.message ?? '', /^Redis at 127\.0\.0\.1:\d+ is back after \d+\.\d s$/);
  const back = lines[1]?.details ?? {};
  assert.ok(typeof back.outageMs === 'number' && back.outageMs > 0);
  assert.ok(typeof back.reconnectAttempts === 'number' && back.reconnectAttempts >= 4);
  assert.doesNotMatch(JSON.stringify(lines), /stack|\bat .*\.js:\d+/);
  assert.equal(outages.down, false);

  // A deliberate disconnect is not an outage.
  for (const redis of connections) redis.disconnect();
  await waitFor(() => connections.every((redis) => redis.status === 'end'), { what: 'closed' });
  assert.equal(lines.length, 2);
});

test('Redis absent at boot: one "waiting for Redis at host:port" line, one line when it comes', async () => {
  const port = await freePort();
  const url = `redis://127.0.0.1:${port}`;
  const { lines, log } = recorder();
  const connections = node(url, new OutageLog(log, redisTarget(url)));
  await waitFor(() => lines.length > 0, { what: 'the waiting line' });
  const server = await RedisServer.start({ port });
  cleanups.push(() => server.destroy());
  await waitFor(() => connections.every((redis) => redis.status === 'ready'), { what: 'first connect' });
  assert.deepEqual(
    lines.map((line) => line.level),
    ['warn', 'info'],
  );
  assert.equal(lines[0]?.message, `waiting for Redis at 127.0.0.1:${port}`);
  assert.match(String((lines[0]?.details.error as { code?: string } | undefined)?.code), /ECONNREFUSED/);
});

test('through pino, the lost line names the error by its type and code, with no stack (not "Object", no "stack": "")', async () => {
  // pino's `err` serializer turned the stackless error of a line into {type: "Object", stack: ""}:
  // the broker's outage-log test then failed whenever the loss came with an error (EPIPE).
  const port = await freePort();
  const url = `redis://127.0.0.1:${port}`;
  const { stream, lines: written } = logSink();
  const logger = pino({ level: 'info' }, stream);
  const connections = node(url, new OutageLog(logger, redisTarget(url)));
  await waitFor(() => written.length > 0, { what: 'the waiting line' });
  for (const redis of connections) redis.disconnect();
  const line = JSON.parse(written[0] as string) as Record<string, unknown>;
  assert.equal(line.msg, `waiting for Redis at 127.0.0.1:${port}`);
  assert.deepEqual(line.error, {
    type: 'Error',
    message: `connect ECONNREFUSED 127.0.0.1:${port}`,
    code: 'ECONNREFUSED',
  });
  assert.doesNotMatch(written.join(''), /"stack"/);
});

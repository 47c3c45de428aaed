import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { after, before, describe, test } from 'node:test';
import { RedisServer, uniquePrefix, waitFor } from '@herald/testkit';
import {
  type HubProcess,
  publish,
  publisherToken,
  publishOk,
  SseStream,
  spawnHub,
  subscribeUrl,
} from './support.js';

/**
 * A publish answered 503 is not published, ever (docs/hub.md, resent publishes): not when Redis
 * was away when it arrived, not when Redis stalled with the script already sent and resumed after
 * the node gave up, not when the connection died with the script in flight and came back.
 */
describe('a publish answered 503 during a Redis fault', () => {
  let redis: RedisServer;
  let node: HubProcess;
  const token = publisherToken();
  const topic = 'https://example.com/fault/publish';

  before(async () => {
    redis = await RedisServer.start();
    node = await spawnHub({
      REDIS_URL: redis.url,
      MERCURE_REDIS_PREFIX: uniquePrefix('publish-fault'),
      MERCURE_ANONYMOUS: '1',
    });
  });
  after(async () => {
    await node.stop();
    const keepAlive = setInterval(() => undefined, 1000);
    await redis.destroy();
    clearInterval(keepAlive);
  });

  const redisCli = (...args: string[]) =>
    execFileSync('redis-cli', ['-p', String(redis.port), ...args], { encoding: 'utf8' });
  const ready = () => waitFor(() => node.isReady(), { what: 'the node ready again', timeoutMs: 20_000 });
  /** The publish script written to Redis and held there by CLIENT PAUSE: in flight, not run. */
  const scriptHeld = () =>
    waitFor(
      () =>
        redisCli('CLIENT', 'LIST')
          .split('\n')
          .some(
            (client) =>
              /\bname=herald-hub-publisher\b/.test(client) &&
              /\bflags=\S*b/.test(client) &&
              /\bcmd=evalsha\b/.test(client),
          ),
      { what: 'the publish script to wait in the paused Redis' },
    );

  /** Every update id in history, oldest first (a replay from `earliest`, closed at the marker). */
  async function historyIds(marker: string): Promise<string[]> {
    const replay = await SseStream.open(subscribeUrl(node.url, [['match', topic]]), {
      'last-event-id': 'earliest',
    });
    await replay.until(() => replay.events.some((event) => event.id === marker));
    replay.close();
    return replay.events.map((event) => event.id as string);
  }

  const faults: { name: string; during: (send: () => Promise<number>) => Promise<number> }[] = [
    {
      name: 'Redis stopped',
      during: async (send) => {
        await redis.stop();
        const status = await send();
        await redis.launch();
        return status;
      },
    },
    {
      // The script is written to the socket and waits in Redis; it runs when the pause ends,
      // after the node answered 503 (WRITE pauses leave CLIENT UNPAUSE allowed).
      name: 'Redis stalled past the publish timeout, then resumed',
      during: async (send) => {
        redisCli('CLIENT', 'PAUSE', '60000', 'WRITE');
        const answered = send();
        try {
          await scriptHeld();
          return await answered;
        } finally {
          redisCli('CLIENT', 'UNPAUSE');
        }
      },
    },
    {
      // Back well within the script deadline: only the fail-fast connection keeps ioredis from
      // resending the script in flight when the connection died.
      name: 'Redis stalled, then killed and restarted at once',
      during: async (send) => {
        redisCli('CLIENT', 'PAUSE', '60000', 'WRITE');
        const answered = send();
        await scriptHeld();
        await redis.kill();
        await redis.launch();
        return answered;
      },
    },
    {
      // The script is in flight when the connection dies; ioredis would resend it on reconnect.
      // Redis dies once the node answered (the publish timeout passed, so did the script's
      // deadline) and comes back at once.
      name: 'Redis stalled, then killed and restarted after the publish timeout',
      during: async (send) => {
        redisCli('CLIENT', 'PAUSE', '60000', 'WRITE');
        const answered = send();
        await scriptHeld();
        const status = await answered;
        await redis.kill();
        await redis.launch();
        return status;
      },
    },
  ];

  for (const { name, during } of faults) {
    test(`${name}: 503, and the update is neither stored nor delivered afterwards`, async () => {
      await ready();
      const live = await SseStream.open(subscribeUrl(node.url, [['match', topic]]));
      const refusedId = `https://example.com/refused/${randomUUID()}`;
      const status = await during(async () => {
        const result = await publish(node.url, { topic, id: refusedId, data: 'refused' }, { token });
        return result.status;
      });
      assert.equal(status, 503);

      await ready();
      const marker = await publishOk(node.url, { topic, data: 'after' }, token);
      await live.until(() => live.events.some((event) => event.id === marker));
      live.close();
      assert.deepEqual(
        live.events.map((event) => event.id),
        [marker],
        'the live subscriber got only the update published after recovery',
      );
      assert.ok(!(await historyIds(marker)).includes(refusedId), 'the refused update is not in history');
    });
  }
});

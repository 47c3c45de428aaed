/*
 * The deny list's storage and propagation (issue #24 item 3; docs/security.md, "Revocation"),
 * against real Redis and in process: one entry per id however often it is added (a resend),
 * the cap, expiry on a moved clock, and a watcher that applies a change at its next poll.
 */
import assert from 'node:assert/strict';
import { after, describe, it } from 'node:test';
import { stopTestRedis, testRedisUrl, uniquePrefix } from '@herald/testkit';
import {
  createRedis,
  KeyClock,
  MemoryRevocationStore,
  parseRedisOptions,
  REVOCATION_POLL_INTERVAL_MS,
  type Redis,
  RedisRevocationStore,
  RevocationLimitError,
  type RevocationStore,
  RevocationWatcher,
} from '../src/index.js';

/** A stand-in for `@herald/auth`'s entries: this package does not depend on it. */
interface Entry {
  readonly id: string;
  readonly expiresAt?: number;
}
const codec = {
  idOf: (entry: Entry) => entry.id,
  parse: (value: unknown) => value as Entry,
};

const START = 1_800_000_000_000;
const connections: Redis[] = [];
after(async () => {
  for (const redis of connections) redis.disconnect();
  await stopTestRedis();
});

async function redisStore(clock: KeyClock, limit?: number): Promise<RedisRevocationStore<Entry>> {
  const redis = createRedis(parseRedisOptions(await testRedisUrl(), { connectionName: 'revocations-test' }));
  connections.push(redis);
  return new RedisRevocationStore({
    redis,
    prefix: uniquePrefix('revocations'),
    clock,
    codec,
    ...(limit !== undefined ? { limit } : {}),
  });
}

const STORES = {
  redis: (clock: KeyClock, limit?: number) => redisStore(clock, limit),
  memory: async (clock: KeyClock, limit?: number) => new MemoryRevocationStore<Entry>(clock, codec, limit),
} satisfies Record<string, (clock: KeyClock, limit?: number) => Promise<RevocationStore<Entry>>>;

for (const [name, create] of Object.entries(STORES)) {
  describe(`${name} revocation store`, () => {
    it('holds one entry per id: the same add applied twice (a resend) gives one entry', async () => {
      const store = await create(new KeyClock(START));
      const entry = { id: 'jti:a', expiresAt: START + 60_000 };
      await store.add(entry);
      await store.add(entry);
      assert.deepEqual(await store.list(), [entry]);
      const replaced = { id: 'jti:a' };
      await store.add(replaced);
      assert.deepEqual(await store.list(), [replaced]);
    });

    it('changes its version on every add and remove', async () => {
      const store = await create(new KeyClock(START));
      const versions = [await store.version()];
      await store.add({ id: 'jti:a' });
      versions.push(await store.version());
      assert.equal(await store.remove('jti:a'), true);
      versions.push(await store.version());
      assert.equal(new Set(versions).size, 3);
      assert.equal(await store.remove('jti:a'), false);
      assert.deepEqual(await store.list(), []);
    });

    it('drops an entry once the clock passes its expiresAt, and frees its place', async () => {
      const clock = new KeyClock(START);
      const store = await create(clock, 2);
      await store.add({ id: 'jti:short', expiresAt: START + 1000 });
      await store.add({ id: 'jti:forever' });
      await assert.rejects(store.add({ id: 'jti:third' }), (error: unknown) => {
        assert.ok(error instanceof RevocationLimitError);
        assert.equal(error.limit, 2);
        return true;
      });
      // Replacing an entry already stored is not a new one.
      await store.add({ id: 'jti:forever' });
      await clock.advance(1000);
      assert.deepEqual(await store.list(), [{ id: 'jti:forever' }]);
      await store.add({ id: 'jti:third' });
      assert.deepEqual(
        (await store.list()).map((entry) => entry.id),
        ['jti:forever', 'jti:third'],
      );
    });
  });
}

describe('revocation watcher', () => {
  it('loads the list at start and applies a change at its next poll on the node clock', async () => {
    const clock = new KeyClock(START);
    const store = await redisStore(clock);
    await store.add({ id: 'jti:before-start' });
    const lists: Entry[][] = [];
    const added: Entry[][] = [];
    const watcher = new RevocationWatcher<Entry>({
      store,
      clock,
      log: { info: () => undefined },
      denyList: {
        replace(entries) {
          lists.push([...entries]);
          return entries.filter((entry) => entry.id !== 'jti:before-start');
        },
      },
      onAdded: (entries) => added.push([...entries]),
    });
    await watcher.start();
    assert.deepEqual(lists, [[{ id: 'jti:before-start' }]]);
    await store.add({ id: 'jti:later' });
    const applied = new Promise<void>((resolve) => {
      const check = () => (added.length > 0 ? resolve() : setImmediate(check));
      check();
    });
    await clock.advance(REVOCATION_POLL_INTERVAL_MS);
    await applied;
    assert.deepEqual(added, [[{ id: 'jti:later' }]]);
    // No change, no re-read.
    await watcher.refresh();
    assert.equal(lists.length, 2);
    await watcher.stop();
  });

  it('keeps the last list and logs once while storage fails, once when it is back', async () => {
    const clock = new KeyClock(START);
    let failing = false;
    const inner = new MemoryRevocationStore<Entry>(clock, codec);
    const store: RevocationStore<Entry> = {
      add: (entry) => inner.add(entry),
      remove: (id) => inner.remove(id),
      list: () => inner.list(),
      version: () => (failing ? Promise.reject(new Error('connection lost')) : inner.version()),
    };
    const lines: string[] = [];
    const replaced: Entry[][] = [];
    const watcher = new RevocationWatcher<Entry>({
      store,
      clock,
      log: { info: (_details, message) => lines.push(message) },
      denyList: {
        replace(entries) {
          replaced.push([...entries]);
          return [...entries];
        },
      },
    });
    await inner.add({ id: 'jti:a' });
    await watcher.start();
    failing = true;
    for (let poll = 0; poll < 5; poll++) await watcher.refresh();
    assert.equal(lines.length, 1);
    assert.match(lines[0] ?? '', /^cannot read the revocation list/);
    assert.equal(replaced.length, 1);
    failing = false;
    await watcher.refresh();
    assert.deepEqual(lines.slice(1), ['revocation list readable again']);
    await watcher.stop();
  });
});

describe('revocation watcher readiness', () => {
  it('is loaded only once a read succeeded: a node started while storage fails is not ready', async () => {
    const clock = new KeyClock(START);
    let failing = true;
    const inner = new MemoryRevocationStore<Entry>(clock, codec);
    const watcher = new RevocationWatcher<Entry>({
      store: {
        add: (entry) => inner.add(entry),
        remove: (id) => inner.remove(id),
        list: () => inner.list(),
        version: () => (failing ? Promise.reject(new Error('down')) : inner.version()),
      },
      clock,
      log: { info: () => undefined },
      denyList: { replace: (entries) => [...entries] },
    });
    await watcher.start();
    assert.equal(watcher.loaded, false);
    failing = false;
    await clock.advance(REVOCATION_POLL_INTERVAL_MS);
    await watcher.settled();
    assert.equal(watcher.loaded, true);
    failing = true;
    await watcher.refresh();
    assert.equal(watcher.loaded, true); // the last list read stays applied
    await watcher.stop();
  });
});

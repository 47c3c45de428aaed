import assert from 'node:assert/strict';
import { after, describe, test } from 'node:test';
import { seededRandom } from '@herald/testkit';
import {
  BACKENDS,
  cleanupRedis,
  publishOk,
  type Selector,
  SseStream,
  startTestHub,
  subscriberToken,
  subscribeUrl,
} from './helpers.js';

after(cleanupRedis);

const TOPICS = Array.from({ length: 8 }, (_, index) => `https://example.com/t/${index}`);

/** Claim entries with an independent oracle of what each one matches. */
const CLAIM_ENTRIES: { selector: Selector; oracle: (topic: string) => boolean }[] = [
  ...TOPICS.map((topic) => ({
    selector: { match: topic },
    oracle: (candidate: string) => candidate === topic,
  })),
  {
    selector: { match: 'https://example.com/t/:id', matchType: 'URLPattern' },
    oracle: (topic) => /^https:\/\/example\.com\/t\/[^/]+$/.test(topic),
  },
  {
    selector: { match: 'https://example\\.com/t/[0-3]', matchType: 'Regexp' },
    oracle: (topic) => /^https:\/\/example\.com\/t\/[0-3]$/.test(topic),
  },
  {
    selector: { match: 'https://example.com/t/{id}', matchType: 'URITemplate' },
    oracle: (topic) => /^https:\/\/example\.com\/t\/[^/]+$/.test(topic),
  },
  { selector: { match: 'https://example.com/elsewhere' }, oracle: () => false },
  { selector: { match: '*' }, oracle: () => true },
];

for (const backend of BACKENDS) {
  describe(`randomized private delivery (${backend} backend)`, () => {
    test('no private update reaches a subscriber whose claims do not allow it; every allowed one arrives', async () => {
      const seed = Number(process.env.HUB_RANDOM_SEED ?? Date.now() % 2 ** 31);
      const random = seededRandom(seed);
      const pick = <T>(items: readonly T[]): T => items[Math.floor(random() * items.length)] as T;
      const hub = await startTestHub(backend, { MERCURE_ANONYMOUS: '1', MERCURE_HEARTBEAT: '0' });
      try {
        const subscribers = await Promise.all(
          Array.from({ length: 24 }, async () => {
            const anonymous = random() < 0.15;
            const entries = anonymous
              ? []
              : Array.from({ length: Math.floor(random() * 3) }, () => pick(CLAIM_ENTRIES));
            // Each subscriber listens to a random subset of topics (exact), or to all of them.
            const everything = random() < 0.5;
            const listened = everything ? TOPICS : TOPICS.filter(() => random() < 0.5);
            const parameters: [string, string][] = everything
              ? [['matchURLPattern', 'https://example.com/t/:id']]
              : [
                  ...listened.map((topic): [string, string] => ['match', topic]),
                  ['match', 'https://example.com/marker'],
                ];
            const headers: Record<string, string> = anonymous
              ? {}
              : { authorization: `Bearer ${subscriberToken(entries.map((entry) => entry.selector))}` };
            const stream = await SseStream.open(subscribeUrl(hub.url, parameters), headers);
            assert.equal(stream.status, 200, stream.body);
            return {
              stream,
              entries,
              listened: new Set([...listened, 'https://example.com/marker']),
              everything,
            };
          }),
        );

        const updates: { id: string; topics: string[]; private: boolean }[] = [];
        for (let index = 0; index < 150; index++) {
          const topics = [
            ...new Set(Array.from({ length: 1 + Math.floor(random() * 3) }, () => pick(TOPICS))),
          ];
          const isPrivate = random() < 0.6;
          const fields: [string, string][] = topics.map((topic): [string, string] => ['topic', topic]);
          if (isPrivate) fields.push(['private', 'on']);
          fields.push(['data', String(index)]);
          updates.push({ id: await publishOk(hub.url, fields), topics, private: isPrivate });
        }
        const marker = await publishOk(hub.url, [
          ['topic', 'https://example.com/marker'],
          ['topic', TOPICS[0] as string],
        ]);

        for (const [index, subscriber] of subscribers.entries()) {
          const expected = updates
            .filter((update) =>
              update.topics.some((topic) => subscriber.everything || subscriber.listened.has(topic)),
            )
            .filter(
              (update) =>
                !update.private ||
                subscriber.entries.some((entry) => update.topics.some((topic) => entry.oracle(topic))),
            )
            .map((update) => update.id);
          expected.push(marker);
          await subscriber.stream.until(() => subscriber.stream.events.some((event) => event.id === marker));
          assert.deepEqual(
            subscriber.stream.events.map((event) => event.id),
            expected,
            `subscriber ${index}, seed ${seed} (rerun with HUB_RANDOM_SEED=${seed})`,
          );
          subscriber.stream.close();
        }
      } finally {
        await hub.close();
      }
    });
  });
}

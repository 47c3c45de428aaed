/*
 * The hub soak (docs/reliability.md): two hub nodes on a private Redis with
 * `appendfsync always`, publishers supplying their own update ids (and retrying a 503 with the
 * same id), subscribers resuming with `Last-Event-ID`, and kill -9 of a node and of Redis on the
 * way. Shared by the script (test/soak/hub-soak.ts) and the short test.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { RedisServer, ReplyLossProxy } from '@herald/testkit';
import { PUBLISHER_SECRET, publisherToken, SUBSCRIBER_SECRET } from '../../services/hub/test/helpers.js';
import { HUB_MAIN } from '../hub/support.js';
import { ClusterClient } from './client.js';
import { ServiceNode } from './processes.js';
import { loseRepliesWhile, scriptTouching } from './reply-loss.js';
import { ResumingSubscriber, type SubscriberCounts } from './sse-subscriber.js';

export const HUB_FAULTS = ['node-kill', 'redis-kill'] as const;
export type HubFault = (typeof HUB_FAULTS)[number];

export interface HubSoakOptions {
  updates: number;
  /** One publisher per topic, each publishing its topic's updates in order. */
  topics: number;
  subscribers: number;
  /** Faults in order, spread evenly over the publishes. */
  faults: readonly HubFault[];
  /** Pause between two lost replies of the reply-loss proxy (0: no proxy). */
  replyLossEveryMs: number;
  /** After the last publish, how long subscribers may go without receiving anything. */
  settleMs: number;
  log: (line: string) => void;
}

export const HUB_SOAK_DEFAULTS: HubSoakOptions = {
  updates: 20_000,
  topics: 4,
  subscribers: 40,
  faults: ['node-kill', 'redis-kill', 'node-kill', 'redis-kill'],
  replyLossEveryMs: 0,
  settleMs: 30_000,
  log: () => undefined,
};

export interface SubscriberResult extends SubscriberCounts {
  missed: number;
}

export interface HubSoakResult {
  options: Omit<HubSoakOptions, 'log'>;
  durationMs: number;
  faults: string[];
  /** Publishes answered 200. */
  published: number;
  subscribers: SubscriberResult[];
  totals: SubscriberResult;
  repliesLost: number;
  publishResends: { connectionErrors: number; unavailable: number; serverErrors: number };
}

const PREFIX = 'soak:';
const topicUrl = (topic: number) => `https://example.com/soak/${topic}`;

export async function runHubSoak(overrides: Partial<HubSoakOptions> = {}): Promise<HubSoakResult> {
  const options = { ...HUB_SOAK_DEFAULTS, ...overrides };
  const { log, ...settings } = options;
  const perTopic = Array.from(
    { length: options.topics },
    (_, t) => Math.floor(options.updates / options.topics) + (t < options.updates % options.topics ? 1 : 0),
  );
  const acknowledged = new Int32Array(options.topics);
  const publishedCount = () => acknowledged.reduce((sum, count) => sum + count, 0);
  const started = performance.now();
  const redis = await RedisServer.start({ appendOnly: true });
  const proxy = options.replyLossEveryMs > 0 ? await ReplyLossProxy.start({ port: redis.port }) : undefined;
  const environment = {
    REDIS_URL: proxy?.url ?? redis.url,
    MERCURE_REDIS_PREFIX: PREFIX,
    MERCURE_ANONYMOUS: '1',
    MERCURE_PUBLISHER_JWT_KEY: PUBLISHER_SECRET,
    MERCURE_SUBSCRIBER_JWT_KEY: SUBSCRIBER_SECRET,
    TRUSTED_PROXIES: '127.0.0.1',
    LOG_LEVEL: 'warn',
    SHUTDOWN_TIMEOUT: '5s',
  };
  const nodes: ServiceNode[] = [];
  const subscribers: ResumingSubscriber[] = [];
  let client: ClusterClient | undefined;
  try {
    nodes.push(await ServiceNode.start('hub-a', HUB_MAIN, environment));
    nodes.push(await ServiceNode.start('hub-b', HUB_MAIN, environment));
    const cluster = new ClusterClient(nodes.map((node) => node.origin));
    client = cluster;
    const query = perTopic.map((_, t) => `match=${encodeURIComponent(topicUrl(t))}`).join('&');
    const urls = nodes.map((node) => `${node.origin}/.well-known/mercure`);
    for (let index = 0; index < options.subscribers; index++) {
      const subscriber = new ResumingSubscriber(urls, query, perTopic, index);
      subscribers.push(subscriber);
      await subscriber.start();
    }

    let aborted = false;
    const headers = {
      authorization: `Bearer ${publisherToken()}`,
      'content-type': 'application/x-www-form-urlencoded',
      'x-forwarded-proto': 'https',
    };
    const publisher = async (topic: number) => {
      for (let seq = 0; seq < (perTopic[topic] as number) && !aborted; seq++) {
        const form = new URLSearchParams({
          topic: topicUrl(topic),
          id: `t${topic}-${seq}`,
          data: String(seq),
        });
        // The same id again until answered: a publish retried with its id is not applied twice.
        const reply = await cluster.retrying(
          'POST',
          '/.well-known/mercure',
          form.toString(),
          () => aborted,
          headers,
        );
        if (!reply) return;
        if (reply.status !== 200) throw new Error(`publish answered ${reply.status} ${reply.text}`);
        acknowledged[topic] = seq + 1;
      }
    };

    const faultsApplied: string[] = [];
    let nodeFaults = 0;
    const applyFault = async (fault: HubFault) => {
      const node = nodes[fault === 'node-kill' ? nodeFaults++ % nodes.length : 0] as ServiceNode;
      const begun = performance.now();
      if (fault === 'node-kill') {
        await node.kill9();
        await sleep(500);
        await node.launch();
      } else {
        await redis.kill();
        await sleep(500);
        await redis.launch();
        await Promise.all(nodes.map((each) => each.waitReady(120_000)));
      }
      const label = fault === 'node-kill' ? `${fault} ${node.name}` : fault;
      faultsApplied.push(`${label} (${((performance.now() - begun) / 1000).toFixed(1)} s)`);
      log(`fault ${label} done at ${publishedCount()} published`);
    };
    const faultRunner = async () => {
      for (const [round, fault] of options.faults.entries()) {
        const threshold = Math.floor(((round + 1) * options.updates) / (options.faults.length + 1));
        while (!aborted && publishedCount() < threshold) await sleep(50);
        if (aborted) return;
        await applyFault(fault);
      }
    };
    let publishing = true;
    const replyLoss = async () => {
      if (!proxy) return;
      const running = () => publishing && !aborted;
      await loseRepliesWhile(
        proxy,
        scriptTouching(`${PREFIX}{hub}`),
        running,
        publishedCount,
        options.replyLossEveryMs,
      );
    };
    const progress = async () => {
      while (publishing && !aborted) {
        await sleep(1000);
        log(
          `${publishedCount()} published; resends: ${cluster.connectionErrors} connection errors, ${cluster.unavailable} 503, ${cluster.serverErrors} other 5xx (last: ${cluster.lastRefusal})`,
        );
      }
    };
    await Promise.all([
      Promise.all(perTopic.map((_, topic) => publisher(topic))).finally(() => {
        publishing = false;
      }),
      faultRunner(),
      replyLoss(),
      progress(),
    ]).catch((error: unknown) => {
      aborted = true;
      throw error;
    });

    // Every subscriber should now catch up to the last update of every topic.
    const caughtUp = (subscriber: ResumingSubscriber) =>
      perTopic.every((count, topic) => count === 0 || subscriber.has(topic, count - 1));
    let lastReceived = -1;
    let quietSince = performance.now();
    while (!subscribers.every(caughtUp) && performance.now() - quietSince < options.settleMs) {
      await sleep(200);
      const received = subscribers.reduce((sum, subscriber) => sum + subscriber.counts.received, 0);
      if (received !== lastReceived) {
        lastReceived = received;
        quietSince = performance.now();
      }
    }
    await Promise.all(subscribers.map((subscriber) => subscriber.stop()));
    const results = subscribers.map((subscriber) => ({
      ...subscriber.counts,
      missed: perTopic.reduce(
        (sum, _, topic) => sum + subscriber.missed(topic, acknowledged[topic] as number),
        0,
      ),
    }));
    const totals = results.reduce(
      (sum, result) => {
        for (const key of Object.keys(sum) as (keyof SubscriberResult)[]) sum[key] += result[key];
        return sum;
      },
      {
        received: 0,
        duplicates: 0,
        outOfOrder: 0,
        resumes: 0,
        refusedConnections: 0,
        neverPublished: 0,
        missed: 0,
      },
    );
    return {
      options: settings,
      durationMs: performance.now() - started,
      faults: faultsApplied,
      published: publishedCount(),
      subscribers: results,
      totals,
      repliesLost: proxy?.lost ?? 0,
      publishResends: {
        connectionErrors: cluster.connectionErrors,
        unavailable: cluster.unavailable,
        serverErrors: cluster.serverErrors,
      },
    };
  } catch (error) {
    const logs = nodes.map((node) => `--- ${node.name} log tail ---\n${node.logTail()}`).join('\n');
    throw new Error(`${error instanceof Error ? error.message : String(error)}\n${logs}`);
  } finally {
    await Promise.all(subscribers.map((subscriber) => subscriber.stop()));
    await client?.close();
    await Promise.all(nodes.map((node) => node.stop()));
    await proxy?.close();
    await redis.destroy();
  }
}

export function hubSoakFailures(result: HubSoakResult): string[] {
  const failures: string[] = [];
  const { totals } = result;
  if (result.published !== result.options.updates) {
    failures.push(`updates never answered 200: ${result.options.updates - result.published}`);
  }
  for (const [what, value] of [
    ['missed', totals.missed],
    ['duplicates', totals.duplicates],
    ['out of order', totals.outOfOrder],
    ['never published but delivered', totals.neverPublished],
  ] as const) {
    if (value !== 0) failures.push(`${what}: ${value}`);
  }
  return failures;
}

/** The printed table: one line per subscriber, then the totals (docs/reliability.md). */
export function formatHubTable(result: HubSoakResult): string {
  const header = [
    'subscriber',
    'received',
    'missed',
    'duplicates',
    'out of order',
    'resumes',
    'refused (re)connects',
  ];
  const line = (name: string, row: SubscriberResult) =>
    [name, row.received, row.missed, row.duplicates, row.outOfOrder, row.resumes, row.refusedConnections]
      .map((cell, index) => String(cell).padStart(index === 0 ? 10 : (header[index] as string).length))
      .join('  ');
  const { publishResends } = result;
  return [
    `updates / topics / subscribers  ${result.options.updates} / ${result.options.topics} / ${result.options.subscribers}`,
    `duration                        ${(result.durationMs / 1000).toFixed(0)} s`,
    `faults                          ${result.faults.join(', ') || 'none'}`,
    `published (answered 200)        ${result.published}`,
    `replies lost by the proxy       ${result.repliesLost}`,
    `publish resends (conn/503/5xx)  ${publishResends.connectionErrors} / ${publishResends.unavailable} / ${publishResends.serverErrors}`,
    `never published but delivered   ${result.totals.neverPublished}`,
    '',
    header.map((cell, index) => (index === 0 ? cell.padStart(10) : cell)).join('  '),
    ...result.subscribers.map((row, index) => line(`#${index}`, row)),
    line('total', result.totals),
  ].join('\n');
}

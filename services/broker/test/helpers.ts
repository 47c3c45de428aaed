import assert from 'node:assert/strict';
import { after, before } from 'node:test';
import { parseEnv } from '@herald/config';
import { createRedis, KeyClock, type RedisClient, redisTopologyFrom } from '@herald/redis';
import {
  REDIS_TOPOLOGY_VARIABLES,
  RedisMonitor,
  RedisServer,
  testRedisEnvironment,
  uniquePrefix,
} from '@herald/testkit';
import { Redis } from 'ioredis';
import { brokerSpec } from '../src/config.js';
import { namespaceAndTask } from '../src/identifiers.js';
import { type Broker, startBroker } from '../src/index.js';

export type Backend = 'memory' | 'redis';
export const BACKENDS: Backend[] = ['memory', 'redis'];

export async function startTestBroker(
  backend: Backend,
  extra: Record<string, string> = {},
  clock?: KeyClock,
): Promise<Broker> {
  const environment: Record<string, string> = {
    PORT: '0',
    HOST: '127.0.0.1',
    LOG_LEVEL: 'silent',
    BROKER_LEASE_SWEEP_INTERVAL: '200',
    BROKER_RETENTION_INTERVAL: '60000',
    BROKER_STATS_INTERVAL: '60000',
    SHUTDOWN_TIMEOUT: '2000',
  };
  if (backend === 'redis') {
    // HERALD_TEST_TOPOLOGY picks standalone, Sentinel or Cluster; a test that names its own
    // Redis (a proxy's URL) keeps it.
    if (!REDIS_TOPOLOGY_VARIABLES.some((name) => name in extra)) {
      Object.assign(environment, await testRedisEnvironment());
      // The suites' transactions span queues of one namespace: on Cluster they share a slot so.
      if (environment.REDIS_CLUSTER_NODES) environment.BROKER_REDIS_SLOT_GROUP = 'namespace';
    }
    environment.BROKER_KEY_PREFIX = uniquePrefix('broker');
  }
  // Last, so a test can pick its own key prefix (to measure what the broker stored).
  Object.assign(environment, extra);
  return startBroker(parseEnv(brokerSpec, environment), {
    fastify: { logger: false },
    ...(clock ? { clock } : {}),
  });
}

/** A broker started before a suite's tests and closed after them, with a client for it. */
export interface BrokerSuite {
  readonly broker: Broker;
  readonly api: BrokerClient;
}

/** Registers the suite's `before`/`after`: call it inside `describe`, read the fields in tests. */
export function brokerSuite(backend: Backend, extra: Record<string, string> = {}): BrokerSuite {
  const suite = {} as { broker: Broker; api: BrokerClient };
  before(async () => {
    suite.broker = await startTestBroker(backend, extra);
    suite.api = client(suite.broker.url);
  });
  after(() => suite.broker.close());
  return suite;
}

/** A suite whose broker reads a clock its tests move instead of waiting (shared/redis KeyClock). */
export interface ClockedBrokerSuite extends BrokerSuite {
  readonly clock: KeyClock;
  /**
   * A fresh queue name (queueName) whose scripts read the suite's clock: on Redis its key base
   * gets a `~test-clock` key (a script on a base without one fails, never reads Redis's clock).
   */
  queue(label?: string): Promise<string>;
}

export function clockedBrokerSuite(backend: Backend, extra: Record<string, string> = {}): ClockedBrokerSuite {
  const suite = {} as { broker: Broker; api: BrokerClient; clock: KeyClock };
  let redis: RedisClient | undefined;
  let baseOf: (queue: string) => string = () => '';
  before(async () => {
    const start = Date.now();
    if (backend === 'redis') {
      const prefix = uniquePrefix('broker');
      const environment = { ...(await testRedisEnvironment()), BROKER_KEY_PREFIX: prefix, ...extra };
      const config = parseEnv(brokerSpec, environment);
      const topology = redisTopologyFrom(config);
      if (!topology) throw new Error('no Redis topology for a clocked broker suite');
      redis = createRedis({ topology, connectionName: 'test-clock' });
      // storage-redis.ts `base`, per BROKER_REDIS_SLOT_GROUP (set for Cluster by startTestBroker).
      const byNamespace =
        config.BROKER_REDIS_SLOT_GROUP === 'namespace' || 'REDIS_CLUSTER_NODES' in environment;
      const encode = encodeURIComponent;
      baseOf = (queue) =>
        byNamespace
          ? `${prefix}{${encode(namespaceAndTask(queue).namespace)}}:${encode(queue)}:`
          : `${prefix}{${encode(queue)}}:`;
      suite.clock = new KeyClock(start, redis);
      suite.broker = await startTestBroker(backend, { BROKER_KEY_PREFIX: prefix, ...extra }, suite.clock);
    } else {
      suite.clock = new KeyClock(start);
      suite.broker = await startTestBroker(backend, extra, suite.clock);
    }
    suite.api = client(suite.broker.url);
  });
  after(async () => {
    await suite.broker.close();
    redis?.disconnect();
  });
  return Object.assign(suite, {
    async queue(label?: string): Promise<string> {
      const queue = queueName(label);
      await suite.clock.track([baseOf(queue)]);
      return queue;
    },
  });
}

/** A clocked suite on a Redis of its own (`privateRedisSuite`): `url` is that Redis. */
export interface PrivateRedisSuite extends ClockedBrokerSuite {
  readonly url: string;
}

/**
 * A clocked suite whose broker runs on a private standalone Redis whatever HERALD_TEST_TOPOLOGY:
 * for tests that watch MONITOR (`commandsDuring`), which sees one server's commands.
 */
export function privateRedisSuite(extra: Record<string, string> = {}): PrivateRedisSuite {
  const suite = {} as { broker: Broker; api: BrokerClient; clock: KeyClock; url: string };
  const prefix = uniquePrefix('broker');
  let server: RedisServer | undefined;
  let admin: Redis | undefined;
  before(async () => {
    server = await RedisServer.start();
    suite.url = server.url;
    admin = new Redis(server.url);
    suite.clock = new KeyClock(Date.now(), admin);
    suite.broker = await startTestBroker(
      'redis',
      { REDIS_URL: server.url, BROKER_KEY_PREFIX: prefix, ...extra },
      suite.clock,
    );
    suite.api = client(suite.broker.url);
  });
  after(async () => {
    await suite.broker?.close();
    admin?.disconnect();
    await server?.destroy();
  });
  return Object.assign(suite, {
    async queue(label?: string): Promise<string> {
      const queue = queueName(label);
      await suite.clock.track([`${prefix}{${encodeURIComponent(queue)}}:`]);
      return queue;
    },
  });
}

export interface Reply<T = unknown> {
  status: number;
  body: T;
  headers: Headers;
}

export function client(base: string, token?: string) {
  async function call<T = any>(
    method: string,
    path: string,
    body?: unknown,
    signal?: AbortSignal,
  ): Promise<Reply<T>> {
    const headers: Record<string, string> = {};
    if (body !== undefined) headers['content-type'] = 'application/json';
    if (token) headers.authorization = `Bearer ${token}`;
    const response = await fetch(base + path, {
      method,
      headers,
      ...(body !== undefined ? { body: typeof body === 'string' ? body : JSON.stringify(body) } : {}),
      ...(signal ? { signal } : {}),
    });
    const text = await response.text();
    return {
      status: response.status,
      body: (text ? JSON.parse(text) : undefined) as T,
      headers: response.headers,
    };
  }
  return {
    call,
    push: (items: unknown[]) => call('POST', '/api/v1/push', { items }),
    pop: (queue: string, query = '', signal?: AbortSignal) =>
      call(
        'GET',
        `/api/v1/pop/queue/${encodeURIComponent(queue)}${query ? `?${query}` : ''}`,
        undefined,
        signal,
      ),
    popPartition: (queue: string, partition: string, query = '') =>
      call(
        'GET',
        `/api/v1/pop/queue/${encodeURIComponent(queue)}/partition/${encodeURIComponent(partition)}${query ? `?${query}` : ''}`,
      ),
    ack: (body: unknown) => call('POST', '/api/v1/ack', body),
    ackBatch: (body: unknown) => call('POST', '/api/v1/ack/batch', body),
    configure: (queue: string, options: Record<string, unknown>) =>
      call('POST', '/api/v1/configure', { queue, options }),
  };
}

export type BrokerClient = ReturnType<typeof client>;

/** Acks popped `messages` as completed in one batch; every ack succeeds. */
export async function completeAll(
  api: BrokerClient,
  messages: readonly { transactionId: string; partitionId: string; leaseId: string }[],
): Promise<void> {
  const done = await api.ackBatch({
    acknowledgments: messages.map((message) => ({
      transactionId: message.transactionId,
      partitionId: message.partitionId,
      leaseId: message.leaseId,
      status: 'completed',
    })),
  });
  assert.equal(done.status, 200);
  assert.deepEqual(
    (done.body as { success: boolean }[]).map((result) => result.success),
    messages.map(() => true),
  );
}

let counter = 0;
export function queueName(label = 'q'): string {
  counter++;
  return `${label}.${process.pid}.${Date.now().toString(36)}.${counter}`;
}

/**
 * Fresh queue names of one namespace, `<unique namespace>.<role>`: on Redis Cluster the suites
 * group slots by namespace, so a transaction or a streams query may span them.
 */
export function queueFamily(label = 'f'): (role: string) => string {
  const namespace = queueName(label).replaceAll('.', '-');
  return (role) => `${namespace}.${role}`;
}

/**
 * The commands the Redis at `url` ran on `queue`'s keys during `action` (MONITOR), each as its
 * name, the key's suffix after the queue's base (`s:p`, `dlq`) and its other arguments.
 */
export async function commandsDuring(
  url: string,
  queue: string,
  action: () => Promise<void>,
): Promise<string[][]> {
  const tag = `{${encodeURIComponent(queue)}}:`;
  const marker = `${tag}done`;
  const commands: string[][] = [];
  let seen: (() => void) | undefined;
  const done = new Promise<void>((resolve) => {
    seen = resolve;
  });
  const monitor = await RedisMonitor.start(url, (args) => {
    if (args[0] === 'echo' && args[1] === marker) seen?.();
    else if (args[1]?.includes(tag))
      commands.push([args[0] as string, args[1].slice(args[1].indexOf(tag) + tag.length), ...args.slice(2)]);
  });
  try {
    await action();
    // MONITOR shows every command Redis ran before this one.
    const redis = new Redis(url);
    await redis.echo(marker);
    await done;
    redis.disconnect();
  } finally {
    monitor.stop();
  }
  return commands;
}

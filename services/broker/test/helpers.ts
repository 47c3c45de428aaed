import { after, before, test } from 'node:test';
import { parseEnv } from '@herald/config';
import { RedisCluster, RedisSentinelSet, testRedisUrl, uniquePrefix } from '@herald/testkit';
import { brokerSpec } from '../src/config.js';
import { type Broker, startBroker } from '../src/index.js';

/**
 * Where a test broker keeps its state: in process, the shared standalone Redis, or a Redis
 * Cluster (3 primaries + 3 replicas) / Sentinel set (1 primary, 2 replicas, 3 sentinels) the
 * helper starts for the file (docs/broker.md "Redis topologies").
 */
export type Backend = 'memory' | 'redis' | 'redis-cluster' | 'redis-sentinel';
const ALL_BACKENDS: readonly Backend[] = ['memory', 'redis', 'redis-cluster', 'redis-sentinel'];

/**
 * The backends every multi-backend suite runs on: memory and standalone Redis, or the list in
 * HERALD_BROKER_TEST_BACKENDS (e.g. `redis-cluster,redis-sentinel`: the full run on every
 * topology, docs/broker.md "Redis topologies").
 */
export const BACKENDS: Backend[] = backendsFrom(process.env.HERALD_BROKER_TEST_BACKENDS);

function backendsFrom(text: string | undefined): Backend[] {
  if (!text) return ['memory', 'redis'];
  return text.split(',').map((name) => {
    const backend = ALL_BACKENDS.find((known) => known === name.trim());
    if (!backend)
      throw new Error(`HERALD_BROKER_TEST_BACKENDS: unknown backend ${name} (${ALL_BACKENDS.join(', ')})`);
    return backend;
  });
}

/**
 * `test` where the backend offers the streams API, nothing on Redis Cluster (its scripts span
 * slots: the routes answer 501 there, which slots.test.ts checks).
 */
export function streamsTest(backend: Backend): (name: string, body: () => Promise<void>) => void {
  return (name, body) => {
    if (backend !== 'redis-cluster') test(name, body);
  };
}

/** One harness per topology and test process, started by its first broker, stopped with its last. */
const harnesses = new Map<Backend, { users: number; started: Promise<RedisCluster | RedisSentinelSet> }>();

async function acquireTopology(backend: 'redis-cluster' | 'redis-sentinel'): Promise<Record<string, string>> {
  let harness = harnesses.get(backend);
  if (!harness) {
    harness = {
      users: 0,
      started: backend === 'redis-cluster' ? RedisCluster.start() : RedisSentinelSet.start(),
    };
    harnesses.set(backend, harness);
  }
  harness.users++;
  const started = await harness.started;
  return started instanceof RedisCluster
    ? // The contract's transactions span queues of one namespace: they share a slot this way.
      { REDIS_CLUSTER_NODES: started.nodes.join(','), BROKER_REDIS_SLOT_GROUP: 'namespace' }
    : { REDIS_SENTINELS: started.sentinels.join(','), REDIS_SENTINEL_MASTER: started.masterName };
}

async function releaseTopology(backend: Backend): Promise<void> {
  const harness = harnesses.get(backend);
  if (!harness) return;
  harness.users--;
  if (harness.users > 0) return;
  harnesses.delete(backend);
  await (await harness.started).stop();
}

export async function startTestBroker(backend: Backend, extra: Record<string, string> = {}): Promise<Broker> {
  if (backend === 'redis-cluster' || backend === 'redis-sentinel') {
    const topology = await acquireTopology(backend);
    try {
      const broker = await startTestBroker('memory', {
        BROKER_KEY_PREFIX: uniquePrefix('broker'),
        ...topology,
        ...extra,
      });
      return {
        ...broker,
        close: async () => {
          await broker.close();
          await releaseTopology(backend);
        },
      };
    } catch (error) {
      await releaseTopology(backend);
      throw error;
    }
  }
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
    environment.REDIS_URL = await testRedisUrl();
    environment.BROKER_KEY_PREFIX = uniquePrefix('broker');
  }
  // Last, so a test can pick its own key prefix (to measure what the broker stored).
  Object.assign(environment, extra);
  return startBroker(parseEnv(brokerSpec, environment), { fastify: { logger: false } });
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

let counter = 0;
export function queueName(label = 'q'): string {
  counter++;
  return `${label}.${process.pid}.${Date.now().toString(36)}.${counter}`;
}

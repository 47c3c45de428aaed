export type { Cluster, Redis } from 'ioredis';
export { isCluster, type RedisClient } from './client.js';
export { type Clock, KeyClock, systemClock } from './clock.js';
export { CLOSE_STEP_MS, closeRedis, settleWithin } from './close.js';
export { createRedis, parseRedisOptions, type RedisOptions } from './connection.js';
export {
  applyDeadlines,
  commandExpecting,
  RedisUnavailableError,
  type RedisUnavailableReason,
} from './deadline.js';
export { probeRedis, type RedisProbeResult } from './health.js';
export { instrumentRedis } from './instrument.js';
export { hashTag, type Keyspace, keyspace } from './keys.js';
export { asRedisUnavailable, isConnectionError, type LoggedError, loggableError } from './log-error.js';
export { OutageLog, type OutageLogger, redisTarget } from './outage-log.js';
export {
  MAX_REVOCATIONS,
  MemoryRevocationStore,
  REVOCATION_POLL_INTERVAL_MS,
  RedisRevocationStore,
  type RedisRevocationStoreOptions,
  type RevocationCodec,
  RevocationLimitError,
  type RevocationStore,
  RevocationWatcher,
  type RevocationWatcherLogger,
  type RevocationWatcherOptions,
  type StoredRevocation,
} from './revocations.js';
export {
  CLOCK_KEY_SUFFIX,
  isNoScript,
  type LoadScriptsOptions,
  type LuaScript,
  loadScripts,
  pipelineScript,
  runScript,
  type ScriptClock,
  type ScriptSet,
  scriptCommand,
  scriptNamed,
} from './scripts.js';
export {
  onShardedMessage,
  publishSharded,
  shardedSubscriberCounts,
  subscribeSharded,
  unsubscribeSharded,
} from './sharded.js';
export {
  type ClusterTopology,
  checkRedisUrl,
  describeTopology,
  parseAddressList,
  type RedisAddress,
  type RedisCredentials,
  type RedisSettings,
  type RedisTopology,
  redisSettings,
  redisTopologyFrom,
  redisTopologyFromEnv,
  type SentinelTopology,
  type StandaloneTopology,
} from './topology.js';
export { DeadlineExceededError, replyWithin } from './within.js';

export { keySlot } from './key-slot.js';
export { logSink } from './log-sink.js';
export { freePort } from './ports.js';
export { uniquePrefix } from './prefix.js';
export { seededRandom } from './random.js';
export {
  type ClusterNode,
  parseClusterNodes,
  RedisCluster,
  type RedisClusterOptions,
} from './redis-cluster.js';
export { type MonitoredCommand, parseMonitorLine, RedisMonitor } from './redis-monitor.js';
export type { AclUser } from './redis-security.js';
export { RedisSentinelSet, type RedisSentinelSetOptions } from './redis-sentinel.js';
export { RedisServer, type RedisServerOptions, redisServerMissingMessage } from './redis-server.js';
export { type RedisRequest, ReplyLossProxy, type RequestPredicate, scriptCall } from './reply-loss-proxy.js';
export {
  REDIS_TOPOLOGY_VARIABLES,
  stopTestRedis,
  type TestTopology,
  testRedisEnvironment,
  testRedisUrl,
  testTopology,
} from './test-redis.js';
export { createTestCertificates, type TestCertificates } from './tls.js';
export { waitFor } from './wait.js';

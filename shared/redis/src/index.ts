export type { Redis } from 'ioredis';
export { createRedis, parseRedisOptions, type RedisOptions, type RedisTopology } from './connection.js';
export { applyDeadlines, RedisUnavailableError, type RedisUnavailableReason } from './deadline.js';
export { probeRedis, type RedisProbeResult } from './health.js';
export { instrumentRedis } from './instrument.js';
export { hashTag, type Keyspace, keyspace } from './keys.js';
export { isConnectionError, type LoggedError, loggableError } from './log-error.js';
export { OutageLog, type OutageLogger, redisTarget } from './outage-log.js';
export {
  isNoScript,
  type LuaScript,
  loadScripts,
  pipelineScript,
  runScript,
  type ScriptSet,
} from './scripts.js';
export { replyWithin } from './within.js';

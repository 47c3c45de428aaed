export type { Redis } from 'ioredis';
export { CLOSE_STEP_MS, closeRedis, settleWithin } from './close.js';
export { createRedis, parseRedisOptions, type RedisOptions, type RedisTopology } from './connection.js';
export { applyDeadlines, RedisUnavailableError, type RedisUnavailableReason } from './deadline.js';
export { probeRedis, type RedisProbeResult } from './health.js';
export { instrumentRedis } from './instrument.js';
export { hashTag, type Keyspace, keyspace } from './keys.js';
export { asRedisUnavailable, isConnectionError, type LoggedError, loggableError } from './log-error.js';
export { OutageLog, type OutageLogger, redisTarget } from './outage-log.js';
export {
  isNoScript,
  type LuaScript,
  loadScripts,
  pipelineScript,
  runScript,
  type ScriptSet,
  scriptNamed,
} from './scripts.js';
export { DeadlineExceededError, replyWithin } from './within.js';

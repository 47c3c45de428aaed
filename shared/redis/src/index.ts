export type { Redis } from 'ioredis';
export { createRedis, parseRedisOptions, type RedisOptions, type RedisTopology } from './connection.js';
export { probeRedis, type RedisProbeResult } from './health.js';
export { instrumentRedis } from './instrument.js';
export { hashTag, type Keyspace, keyspace } from './keys.js';
export { type LuaScript, loadScripts, pipelineScript, runScript, type ScriptSet } from './scripts.js';

export { createRedis, parseRedisOptions, type RedisOptions, type RedisTopology } from './connection.js';
export { loadScripts, pipelineScript, runScript, type LuaScript, type ScriptSet } from './scripts.js';
export { keyspace, hashTag, type Keyspace } from './keys.js';
export { probeRedis, type RedisProbeResult } from './health.js';
export { instrumentRedis } from './instrument.js';
export type { Redis } from 'ioredis';

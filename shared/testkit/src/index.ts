export { freePort } from './ports.js';
export { RedisServer, type RedisServerOptions, redisServerMissingMessage } from './redis-server.js';
export { testRedisUrl, stopTestRedis } from './test-redis.js';
export { uniquePrefix } from './prefix.js';
export { waitFor } from './wait.js';

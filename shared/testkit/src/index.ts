export { freePort } from './ports.js';
export { uniquePrefix } from './prefix.js';
export { RedisServer, type RedisServerOptions, redisServerMissingMessage } from './redis-server.js';
export { stopTestRedis, testRedisUrl } from './test-redis.js';
export { waitFor } from './wait.js';

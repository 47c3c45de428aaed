export { freePort } from './ports.js';
export { uniquePrefix } from './prefix.js';
export { seededRandom } from './random.js';
export { RedisServer, type RedisServerOptions, redisServerMissingMessage } from './redis-server.js';
export { type RedisRequest, ReplyLossProxy, type RequestPredicate, scriptCall } from './reply-loss-proxy.js';
export { stopTestRedis, testRedisUrl } from './test-redis.js';
export { waitFor } from './wait.js';

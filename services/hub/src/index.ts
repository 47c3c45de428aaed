export { type HubConfig, hubSpec, parseHubConfig, validateHubConfig } from './config.js';
export { HubError } from './errors.js';
export { createHub, HUB_PATH, Hub, type HubOptions, type HubServer, startHub } from './hub.js';
export { formatEvent } from './sse.js';
export type { SubscriptionRecord, Transport } from './transport.js';
export { MemoryTransport } from './transport-memory.js';
export { LUA_DIRECTORY, RedisTransport } from './transport-redis.js';
export type { Position, StoredUpdate, Update } from './update.js';

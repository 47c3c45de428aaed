export { Engine } from './engine.js';
export { type Clock, Keyspace, systemClock } from './keyspace.js';
export { type Reply, ReplyError, Status } from './reply.js';
export { EmbeddedRedis, type EmbeddedRedisOptions } from './server.js';

export {
  type ErrorArea,
  HeraldError,
  type HeraldErrorCode,
  type HeraldErrorOptions,
  isHeraldError,
  publicMessage,
  retryAfterSeconds,
  statusOf,
} from './herald-error.js';
export { type ErrorBodyFormat, type ErrorReply, sendError, sendErrorBody } from './reply.js';

export { type ErrorHandlerOptions, installErrorHandler, type Refusal } from './error-handler.js';
export { type DrainHook, Lifecycle, READINESS_INTERVAL_MS, type ReadinessCheck } from './lifecycle.js';
export { type LogDestination, logDestination, prettyLogLine } from './log-destination.js';
export { announceListening, exitWithParent, type ListeningMessage } from './process.js';
export { redactText, redactUrl } from './redact.js';
export { createServerKit, type ServerKit, type ServerKitOptions, type TlsHttp2Options } from './server.js';
export { type HttpConfig, httpSettings } from './settings.js';

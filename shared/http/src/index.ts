export { type DrainHook, Lifecycle, READINESS_INTERVAL_MS, type ReadinessCheck } from './lifecycle.js';
export { redactText, redactUrl } from './redact.js';
export { createServerKit, type ServerKit, type ServerKitOptions } from './server.js';
export { type HttpConfig, httpSettings } from './settings.js';

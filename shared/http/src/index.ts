export { type DrainHook, Lifecycle, type ReadinessCheck } from './lifecycle.js';
export { redactText, redactUrl } from './redact.js';
export { createServerKit, type ServerKit, type ServerKitOptions } from './server.js';
export { type HttpConfig, httpSettings } from './settings.js';

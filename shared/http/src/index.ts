export { httpSettings, type HttpConfig } from './settings.js';
export { createServerKit, type ServerKit, type ServerKitOptions } from './server.js';
export { Lifecycle, type ReadinessCheck, type DrainHook } from './lifecycle.js';
export { redactUrl } from './redact.js';

export { ConfigError } from './errors.js';
export {
  boolean,
  duration,
  enumOf,
  integer,
  list,
  port,
  string,
  url,
  type Setting,
  type SettingOptions,
} from './settings.js';
export { parseBoolean, parseDuration } from './parse.js';
export { loadConfig, parseEnv, type ConfigOf, type Environment, type Spec } from './env.js';

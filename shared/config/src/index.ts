export {
  type ConfigOf,
  closestName,
  type Environment,
  exitOnConfigError,
  isConfigError,
  kubernetesServiceLink,
  loadConfig,
  parseEnv,
  type Spec,
} from './env.js';
export { ConfigError } from './errors.js';
export { parseBoolean, parseDuration } from './parse.js';
export {
  boolean,
  duration,
  enumOf,
  hexBytes,
  hexBytesList,
  integer,
  list,
  port,
  type Setting,
  type SettingOptions,
  string,
  url,
} from './settings.js';

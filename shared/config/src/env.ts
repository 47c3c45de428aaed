import { ConfigError } from './errors.js';
import { isInvalidValue, type Setting } from './settings.js';

export type Environment = Readonly<Record<string, string | undefined>>;
// biome-ignore lint/suspicious/noExplicitAny: a spec maps names to settings of any value type
export type Spec = Readonly<Record<string, Setting<any>>>;
export type ConfigOf<S extends Spec> = { readonly [K in keyof S]: ReturnType<S[K]['read']> };

export interface ParseOptions {
  /**
   * Variable-name prefixes this service owns (`MERCURE_`, `JWT_`): a variable with such a prefix
   * that the spec does not list is a typo, and stops the process rather than being ignored.
   */
  readonly ownedPrefixes?: readonly string[];
}

/**
 * Parses the environment against a spec, once, at boot. Every problem is collected so the
 * operator sees them all at once; the first is thrown as a ConfigError naming its variable,
 * with the others appended to its message.
 */
export function parseEnv<S extends Spec>(
  spec: S,
  environment: Environment,
  options: ParseOptions = {},
): ConfigOf<S> {
  const problems: ConfigError[] = [];
  const config: Record<string, unknown> = {};
  for (const [name, setting] of Object.entries(spec)) {
    const raw = environment[name];
    const text = raw === undefined || raw.trim() === '' ? undefined : raw;
    try {
      config[name] = setting.read(text);
    } catch (error) {
      if (!isInvalidValue(error)) throw error;
      problems.push(new ConfigError(name, error.message));
    }
  }
  for (const name of Object.keys(environment)) {
    if (name in spec) continue;
    if (options.ownedPrefixes?.some((prefix) => name.startsWith(prefix))) {
      problems.push(new ConfigError(name, 'unknown setting (check the spelling)'));
    }
  }
  const [first, ...rest] = problems;
  if (first) {
    if (rest.length === 0) throw first;
    throw new ConfigError(
      first.variable,
      `${first.message.slice(first.variable.length + 2)}; also ${rest.map((p) => p.message).join('; ')}`,
    );
  }
  return config as ConfigOf<S>;
}

/**
 * parseEnv for a process entry point: on a configuration error, print it and exit 1 before
 * anything binds.
 */
export function loadConfig<S extends Spec>(
  spec: S,
  environment: Environment = process.env,
  options: ParseOptions = {},
): ConfigOf<S> {
  try {
    return parseEnv(spec, environment, options);
  } catch (error) {
    if (!(error instanceof ConfigError)) throw error;
    process.stderr.write(`configuration error: ${error.message}\n`);
    process.exit(1);
  }
}

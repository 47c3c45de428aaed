import { ConfigError } from './errors.js';
import { isInvalidValue, type Setting } from './settings.js';

export type Environment = Readonly<Record<string, string | undefined>>;
// biome-ignore lint/suspicious/noExplicitAny: a spec maps names to settings of any value type
export type Spec = Readonly<Record<string, Setting<any>>>;
export type ConfigOf<S extends Spec> = { readonly [K in keyof S]: ReturnType<S[K]['read']> };

export interface ParseOptions {
  /**
   * Variable-name prefixes this service owns (`MERCURE_`, `JWT_`, `BROKER_`): a variable with such
   * a prefix that the spec does not list is a typo, and stops the process rather than being
   * ignored (with the closest known name when one is close). The names Kubernetes injects for a
   * Service (`kubernetesServiceLink`) are never refused.
   */
  readonly ownedPrefixes?: readonly string[];
}

/**
 * Whether a variable is one Kubernetes injects for a Service of the pod's namespace (service links,
 * on unless `enableServiceLinks: false`), e.g. for a Service named `broker` on port 6632:
 * `BROKER_SERVICE_HOST`, `BROKER_SERVICE_PORT`, `BROKER_SERVICE_PORT_HTTP` (a named port),
 * `BROKER_PORT=tcp://10.0.0.7:6632`, `BROKER_PORT_6632_TCP` and its `_PROTO`, `_PORT`, `_ADDR`.
 * A bare `…_PORT` counts only with the `tcp://host:port` value Kubernetes (and Docker links) give
 * it, so `BROKER_PORT=7000` is still reported as a typo.
 */
export function kubernetesServiceLink(name: string, value: string | undefined): boolean {
  if (/^[A-Z0-9_]+_SERVICE_(?:HOST|PORT(?:_[A-Z0-9_]+)?)$/.test(name)) return true;
  if (/^[A-Z0-9_]+_PORT_\d{1,5}_(?:TCP|UDP|SCTP)(?:_PROTO|_PORT|_ADDR)?$/.test(name)) return true;
  return /^[A-Z0-9_]+_PORT$/.test(name) && /^(?:tcp|udp|sctp):\/\/[^\s]+:\d{1,5}$/.test(value ?? '');
}

/** The spec's name closest to a misspelt one, when it is close (edit distance within a third). */
export function closestName(name: string, names: readonly string[]): string | undefined {
  let best: string | undefined;
  let bestDistance = Number.POSITIVE_INFINITY;
  for (const candidate of names) {
    const distance = editDistance(name, candidate);
    if (distance < bestDistance) {
      best = candidate;
      bestDistance = distance;
    }
  }
  if (best !== undefined && bestDistance <= Math.max(2, Math.floor(name.length / 3))) return best;
  // An extra prefix (BROKER_DEFAULT_TIMEOUT for DEFAULT_TIMEOUT, BROKER_PORT for PORT).
  return names.find((candidate) => name.endsWith(`_${candidate}`));
}

/** Levenshtein distance, one row at a time. */
function editDistance(a: string, b: string): number {
  let previous = Array.from({ length: b.length + 1 }, (_, index) => index);
  for (let i = 1; i <= a.length; i++) {
    const current = [i];
    for (let j = 1; j <= b.length; j++) {
      const substitution = (previous[j - 1] as number) + (a[i - 1] === b[j - 1] ? 0 : 1);
      current.push(Math.min((previous[j] as number) + 1, (current[j - 1] as number) + 1, substitution));
    }
    previous = current;
  }
  return previous[b.length] as number;
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
  const known = Object.keys(spec);
  for (const [name, value] of Object.entries(environment)) {
    if (name in spec || kubernetesServiceLink(name, value)) continue;
    if (options.ownedPrefixes?.some((prefix) => name.startsWith(prefix))) {
      const suggestion = closestName(name, known);
      problems.push(
        new ConfigError(
          name,
          `unknown setting (check the spelling${suggestion ? `; did you mean ${suggestion}?` : ''})`,
        ),
      );
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
 * A configuration error found by any part of a service at boot (a ConfigError of this package,
 * or a service's own error class named `ConfigError`): its message names the variable.
 */
export function isConfigError(error: unknown): error is Error {
  return error instanceof ConfigError || (error instanceof Error && error.name === 'ConfigError');
}

/**
 * For a process entry point: a configuration error is printed as one line naming the variable
 * (no stack; messages never hold a secret's value) and the process exits 1; anything else is
 * rethrown.
 */
export function exitOnConfigError(error: unknown): never {
  if (!isConfigError(error)) throw error;
  process.stderr.write(`configuration error: ${error.message}\n`);
  process.exit(1);
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
    exitOnConfigError(error);
  }
}

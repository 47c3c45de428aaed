/** A Redis Cluster hash tag: keys sharing it land in one slot, so one script may touch them all. */
export function hashTag(value: string): string {
  return `{${value.replaceAll('{', '(').replaceAll('}', ')')}}`;
}

export interface Keyspace {
  readonly prefix: string;
  /** `prefix + parts.join(':')`. */
  key(...parts: string[]): string;
  /** A child keyspace under `prefix + part + ':'`. */
  child(part: string): Keyspace;
}

/** Key builder under one prefix (default `herald:`): the single place keys are spelled. */
export function keyspace(prefix = 'herald:'): Keyspace {
  return {
    prefix,
    key: (...parts) => prefix + parts.join(':'),
    child: (part) => keyspace(`${prefix}${part}:`),
  };
}

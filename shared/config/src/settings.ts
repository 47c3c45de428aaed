import { parseBoolean, parseDuration } from './parse.js';

/**
 * One environment variable's rule. `read` receives the raw text (undefined when the variable is
 * unset or empty) and returns the typed value, or throws a reason string's Error.
 */
export interface Setting<T> {
  /** Human-readable form, used in error messages and generated docs, e.g. `duration`. */
  readonly form: string;
  readonly defaultText?: string;
  readonly required: boolean;
  read(text: string | undefined): T;
}

export type SettingOptions<T> = { default: T } | { required: true } | { optional?: true };

type Value<T, O> = O extends { default: T } ? T : O extends { required: true } ? T : T | undefined;

class InvalidValue extends Error {}

function define<T, O extends SettingOptions<T>>(
  form: string,
  parseText: (text: string) => T | undefined,
  options: O | undefined,
  formatDefault: (value: T) => string = String,
  /** Key material: a bad value is described by its length, never echoed into logs. */
  secret = false,
): Setting<Value<T, O>> {
  const hasDefault = options !== undefined && 'default' in options;
  const required = options !== undefined && 'required' in options && options.required === true;
  return {
    form,
    required,
    ...(hasDefault ? { defaultText: formatDefault(options.default as T) } : {}),
    read(text) {
      if (text === undefined) {
        if (hasDefault) return options.default as Value<T, O>;
        if (required) throw new InvalidValue('is required but not set');
        return undefined as Value<T, O>;
      }
      const value = parseText(text);
      if (value === undefined) {
        const got = secret ? `a value of ${text.length} characters` : JSON.stringify(text);
        throw new InvalidValue(`expected ${form}, got ${got}`);
      }
      return value as Value<T, O>;
    },
  };
}

export function isInvalidValue(error: unknown): error is Error {
  return error instanceof InvalidValue;
}

export function string<O extends SettingOptions<string>>(options?: O) {
  return define<string, O>('a string', (text) => text, options);
}

export function integer<O extends SettingOptions<number>>(options?: O & { min?: number; max?: number }) {
  const min = options?.min ?? Number.MIN_SAFE_INTEGER;
  const max = options?.max ?? Number.MAX_SAFE_INTEGER;
  return define<number, O>(
    `an integer in [${min}, ${max}]`,
    (text) => {
      if (!/^-?\d+$/.test(text.trim())) return undefined;
      const value = Number(text);
      return Number.isSafeInteger(value) && value >= min && value <= max ? value : undefined;
    },
    options,
  );
}

export function port<O extends SettingOptions<number>>(options?: O) {
  return integer<O>({ ...(options as O), min: 0, max: 65535 });
}

/** `true`/`false`/`1`/`0`, any case. */
export function boolean<O extends SettingOptions<boolean>>(options?: O) {
  return define<boolean, O>('true, false, 1 or 0', parseBoolean, options);
}

/** Milliseconds: a bare integer, or a number with a unit (`40s`, `10m`). */
export function duration<O extends SettingOptions<number>>(options?: O & { min?: number; max?: number }) {
  const min = options?.min ?? 0;
  const max = options?.max;
  return define<number, O>(
    max === undefined
      ? `a duration (milliseconds, or a number with ms/s/m/h/d) of at least ${min} ms`
      : `a duration (milliseconds, or a number with ms/s/m/h/d) from ${min} to ${max} ms`,
    (text) => {
      const value = parseDuration(text);
      return value !== undefined && value >= min && (max === undefined || value <= max) ? value : undefined;
    },
    options,
    (value) => `${value}ms`,
  );
}

export function url<O extends SettingOptions<URL>>(options?: O & { protocols?: readonly string[] }) {
  const protocols = options?.protocols;
  return define<URL, O>(
    protocols ? `a URL (${protocols.join(', ')})` : 'a URL',
    (text) => {
      if (!URL.canParse(text)) return undefined;
      const parsed = new URL(text);
      return !protocols || protocols.includes(parsed.protocol) ? parsed : undefined;
    },
    options,
    (value) => value.href,
  );
}

export function enumOf<const V extends string, O extends SettingOptions<V>>(
  values: readonly V[],
  options?: O & { caseInsensitive?: boolean },
) {
  const caseInsensitive = options?.caseInsensitive ?? false;
  return define<V, O>(
    `one of ${values.join(', ')}`,
    (text) =>
      values.find((value) =>
        caseInsensitive ? value.toLowerCase() === text.trim().toLowerCase() : value === text.trim(),
      ),
    options,
  );
}

function parseHex(text: string, bytes: number): Buffer | undefined {
  const trimmed = text.trim();
  return trimmed.length === bytes * 2 && /^[0-9a-fA-F]+$/.test(trimmed)
    ? Buffer.from(trimmed, 'hex')
    : undefined;
}

/** Optional key material: hexadecimal text of exactly `bytes` bytes (a 256-bit key: 64 characters). */
export function hexBytes(bytes: number) {
  return define<Buffer, { optional: true }>(
    `${bytes * 2} hexadecimal characters`,
    (text) => parseHex(text, bytes),
    { optional: true },
    String,
    true,
  );
}

/** A comma-separated list of `hexBytes` keys (empty when unset); one bad item fails it all. */
export function hexBytesList(bytes: number) {
  return define<Buffer[], { default: Buffer[] }>(
    `a comma-separated list of ${bytes * 2}-hexadecimal-character keys`,
    (text) => {
      const keys = text
        .split(',')
        .map((item) => item.trim())
        .filter((item) => item !== '')
        .map((item) => parseHex(item, bytes));
      return keys.every((key) => key !== undefined) ? (keys as Buffer[]) : undefined;
    },
    { default: [] },
    () => 'empty',
    true,
  );
}

/** A comma-separated list; blank items are dropped. */
export function list<O extends SettingOptions<string[]>>(options?: O) {
  return define<string[], O>(
    'a comma-separated list',
    (text) =>
      text
        .split(',')
        .map((item) => item.trim())
        .filter((item) => item !== ''),
    options,
    (value) => value.join(','),
  );
}

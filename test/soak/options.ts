/** Command-line parsing shared by the soak scripts: a bad value stops the script with its name. */
export function integerOption(raw: string | undefined, name: string, fallback: number): number {
  if (raw === undefined) return fallback;
  const value = Number(raw.replace(/_/g, ''));
  if (!Number.isInteger(value) || value < 0) throw new Error(`--${name} must be a non-negative integer`);
  return value;
}

export function listOption<T extends string>(
  raw: string | undefined,
  name: string,
  allowed: readonly T[],
  fallback: readonly T[],
): readonly T[] {
  if (raw === undefined) return fallback;
  const items = raw.split(',').filter(Boolean);
  for (const item of items) {
    if (!allowed.includes(item as T))
      throw new Error(`--${name}: ${item} is not one of ${allowed.join(', ')}`);
  }
  return items as T[];
}

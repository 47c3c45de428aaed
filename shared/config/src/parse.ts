/** Pure value parsers. Each returns undefined when the text is not of its form. */

const TRUE_WORDS = new Set(['true', '1']);
const FALSE_WORDS = new Set(['false', '0']);

/** `true`/`false`/`1`/`0` in any case. */
export function parseBoolean(text: string): boolean | undefined {
  const word = text.trim().toLowerCase();
  if (TRUE_WORDS.has(word)) return true;
  if (FALSE_WORDS.has(word)) return false;
  return undefined;
}

const UNIT_MILLISECONDS: Record<string, number> = {
  ms: 1,
  s: 1000,
  m: 60_000,
  h: 3_600_000,
  d: 86_400_000,
};

/**
 * A duration in milliseconds: a bare integer is milliseconds; otherwise a number with a unit
 * (`ms`, `s`, `m`, `h`, `d`), e.g. `40s`, `10m`, `1.5h`. Compound forms (`1h30m`) are accepted too.
 */
export function parseDuration(text: string): number | undefined {
  const trimmed = text.trim();
  if (/^\d+$/.test(trimmed)) return Number(trimmed);
  const part = /(\d+(?:\.\d+)?)(ms|s|m|h|d)/gy;
  let total = 0;
  let consumed = 0;
  for (let match = part.exec(trimmed); match; match = part.exec(trimmed)) {
    const [whole, amount, unit] = match;
    total += Number(amount) * (UNIT_MILLISECONDS[unit as string] as number);
    consumed += whole.length;
  }
  if (consumed === 0 || consumed !== trimmed.length) return undefined;
  return Math.round(total);
}

/**
 * What a command answers, as RESP2 carries it: a bulk string, an integer, nil, an array, a
 * status (`+OK`) or an error. The same values cross into Lua (scripting.ts) and onto the wire
 * (resp.ts), so each command is written once against this type.
 */
export type Reply = string | number | null | Status | ReplyError | Reply[];

/** A simple-string reply (`+OK`, `+PONG`, `+QUEUED`). */
export class Status {
  constructor(readonly text: string) {}
}

export const OK = new Status('OK');

/** An error reply: its text starts with the code (`ERR`, `WRONGTYPE`, `NOSCRIPT`…), as Redis's do. */
export class ReplyError extends Error {
  constructor(readonly text: string) {
    super(text);
    this.name = 'ReplyError';
  }
}

/** Redis's wording for the errors every command family shares. */
export const errors = {
  wrongType: () => new ReplyError('WRONGTYPE Operation against a key holding the wrong kind of value'),
  notInteger: () => new ReplyError('ERR value is not an integer or out of range'),
  notFloat: () => new ReplyError('ERR value is not a valid float'),
  syntax: () => new ReplyError('ERR syntax error'),
  arity: (name: string) =>
    new ReplyError(`ERR wrong number of arguments for '${name.toLowerCase()}' command`),
};

/** Throws the reply as an error: handlers throw, the dispatcher turns it back into a reply. */
export function fail(error: ReplyError): never {
  throw error;
}

const INTEGER = /^-?(0|[1-9]\d*)$/;

/** An argument Redis reads as a 64-bit integer (`string2ll`): no sign `+`, no spaces, no `.0`. */
export function integerArgument(text: string): number {
  if (!INTEGER.test(text)) fail(errors.notInteger());
  const value = Number(text);
  if (!Number.isSafeInteger(value)) fail(errors.notInteger());
  return value;
}

/** An argument Redis reads as a double (`-inf`, `+inf`, `1e3`, `.5`), never NaN. */
export function floatArgument(text: string): number {
  const lower = text.toLowerCase();
  if (lower === 'inf' || lower === '+inf' || lower === 'infinity' || lower === '+infinity') return Infinity;
  if (lower === '-inf' || lower === '-infinity') return -Infinity;
  if (text.trim() !== text || text === '') fail(errors.notFloat());
  const value = Number(text);
  if (Number.isNaN(value)) fail(errors.notFloat());
  return value;
}

/** A double as Redis 7.0 writes it in a reply (`%.17g`; `inf` and `-inf`). */
export function formatDouble(value: number): string {
  if (value === Infinity) return 'inf';
  if (value === -Infinity) return '-inf';
  if (Number.isInteger(value) && Math.abs(value) < 1e17) return String(value);
  const [mantissa = '', exponent] = value.toPrecision(17).split('e');
  const trimmed = mantissa.includes('.') ? mantissa.replace(/0+$/, '').replace(/\.$/, '') : mantissa;
  if (exponent === undefined) return trimmed;
  const power = Number(exponent);
  return `${trimmed}e${power < 0 ? '-' : '+'}${String(Math.abs(power)).padStart(2, '0')}`;
}

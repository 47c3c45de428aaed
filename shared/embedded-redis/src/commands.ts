/**
 * The command table: each command's arity (Redis's convention: n exact, -n at least n, the name
 * counted) and its handler. Handlers hold no rule of any Herald service: they are Redis's
 * commands, checked one by one against a real Redis (test/commands-differential.test.ts).
 */
import type { Keyspace } from './keyspace.js';
import { errors, fail, integerArgument, type Reply, ReplyError } from './reply.js';

export interface CommandContext {
  readonly keys: Keyspace;
}

export type Handler = (context: CommandContext, args: readonly string[]) => Reply;

export interface Command {
  readonly arity: number;
  readonly handler: Handler;
  /** Changes data: refused inside a script run read-only (none here) and counted as a write. */
  readonly write: boolean;
}

export type CommandTable = ReadonlyMap<string, Command>;

/** Builds a family's table from `[name, arity, write, handler]` rows. */
export function table(rows: readonly (readonly [string, number, boolean, Handler])[]): Map<string, Command> {
  return new Map(rows.map(([name, arity, write, handler]) => [name, { arity, handler, write }]));
}

/** Runs `args` (name first) against `commands`: arity checked, errors returned as replies. */
export function dispatch(commands: CommandTable, context: CommandContext, args: readonly string[]): Reply {
  const name = (args[0] ?? '').toUpperCase();
  const command = commands.get(name);
  if (!command) {
    const shown = args
      .slice(1)
      .map((arg) => `'${arg}'`)
      .join(' ');
    return new ReplyError(`ERR unknown command '${args[0] ?? ''}', with args beginning with: ${shown}`);
  }
  const { arity } = command;
  if ((arity > 0 && args.length !== arity) || (arity < 0 && args.length < -arity)) return errors.arity(name);
  try {
    return command.handler(context, args.slice(1));
  } catch (error) {
    if (error instanceof ReplyError) return error;
    throw error;
  }
}

/** `args[i]`, which the arity check guarantees. */
export function at(args: readonly string[], index: number): string {
  const value = args[index];
  if (value === undefined) fail(errors.syntax());
  return value;
}

/**
 * LRANGE's, ZRANGE's and their kin's indexes (`start stop`, negative from the end), clamped to
 * a collection of `length`: empty when `start > stop`.
 */
export function indexRange(length: number, startText: string, stopText: string): [number, number] {
  let start = integerArgument(startText);
  let stop = integerArgument(stopText);
  if (start < 0) start = Math.max(0, length + start);
  if (stop < 0) stop = length + stop;
  return [start, Math.min(stop, length - 1)];
}

/** Pairs `[a, b, c, d]` into `[[a, b], [c, d]]`; an odd count is Redis's arity error for `name`. */
export function pairs(args: readonly string[], name: string): [string, string][] {
  if (args.length % 2 !== 0 || args.length === 0) fail(errors.arity(name));
  const result: [string, string][] = [];
  for (let index = 0; index < args.length; index += 2) result.push([at(args, index), at(args, index + 1)]);
  return result;
}

/** Redis's glob (KEYS, SCAN MATCH): `*`, `?`, `[…]` with `^` and ranges, `\` escapes. */
export function globMatches(pattern: string, text: string): boolean {
  let source = '';
  for (let index = 0; index < pattern.length; index++) {
    const char = pattern[index] as string;
    if (char === '*') source += '[\\s\\S]*';
    else if (char === '?') source += '[\\s\\S]';
    else if (char === '\\' && index + 1 < pattern.length)
      source += escapeForRegExp(pattern[++index] as string);
    else if (char === '[') {
      const close = pattern.indexOf(']', index + 1);
      if (close === -1) source += '\\[';
      else {
        let body = pattern.slice(index + 1, close);
        const negate = body.startsWith('^');
        if (negate) body = body.slice(1);
        source += `[${negate ? '^' : ''}${body.replace(/[\\\]]/g, '\\$&')}]`;
        index = close;
      }
    } else source += escapeForRegExp(char);
  }
  return new RegExp(`^${source}$`).test(text);
}

function escapeForRegExp(char: string): string {
  return char.replace(/[.*+?^${}()|[\]\\/]/g, '\\$&');
}

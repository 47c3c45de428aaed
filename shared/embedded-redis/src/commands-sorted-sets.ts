/** Sorted sets: members ordered by score, then by member. */
import { at, indexRange, table } from './commands.js';
import type { Keyspace, SortedSetValue } from './keyspace.js';
import {
  errors,
  fail,
  floatArgument,
  formatDouble,
  integerArgument,
  type Reply,
  ReplyError,
} from './reply.js';

const newSortedSet = (): SortedSetValue => ({ scores: new Map(), order: [] });

function compare(a: { score: number; member: string }, b: { score: number; member: string }): number {
  if (a.score !== b.score) return a.score < b.score ? -1 : 1;
  return a.member < b.member ? -1 : a.member > b.member ? 1 : 0;
}

/** Index of the first entry not before `probe`. */
function lowerBound(order: SortedSetValue['order'], probe: { score: number; member: string }): number {
  let low = 0;
  let high = order.length;
  while (low < high) {
    const middle = (low + high) >>> 1;
    if (compare(order[middle] as { score: number; member: string }, probe) < 0) low = middle + 1;
    else high = middle;
  }
  return low;
}

function remove(set: SortedSetValue, member: string): boolean {
  const score = set.scores.get(member);
  if (score === undefined) return false;
  set.order.splice(lowerBound(set.order, { score, member }), 1);
  set.scores.delete(member);
  return true;
}

function insert(set: SortedSetValue, member: string, score: number): void {
  remove(set, member);
  set.scores.set(member, score);
  set.order.splice(lowerBound(set.order, { score, member }), 0, { score, member });
}

interface ScoreBound {
  value: number;
  exclusive: boolean;
}

function scoreBound(text: string): ScoreBound {
  const exclusive = text.startsWith('(');
  try {
    return { value: floatArgument(exclusive ? text.slice(1) : text), exclusive };
  } catch {
    return fail(new ReplyError('ERR min or max is not a float'));
  }
}

function aboveMin(score: number, min: ScoreBound): boolean {
  return min.exclusive ? score > min.value : score >= min.value;
}

function belowMax(score: number, max: ScoreBound): boolean {
  return max.exclusive ? score < max.value : score <= max.value;
}

/** WITHSCORES and LIMIT offset count, in any order. */
function rangeOptions(args: readonly string[], allowLimit: boolean) {
  let withScores = false;
  let offset = 0;
  let count = -1;
  for (let index = 0; index < args.length; index++) {
    const option = (args[index] as string).toUpperCase();
    if (option === 'WITHSCORES') withScores = true;
    else if (option === 'LIMIT' && allowLimit && index + 2 < args.length) {
      offset = integerArgument(args[++index] as string);
      count = integerArgument(args[++index] as string);
    } else fail(errors.syntax());
  }
  return { withScores, offset, count };
}

function reply(entries: readonly { score: number; member: string }[], withScores: boolean): Reply[] {
  return withScores
    ? entries.flatMap((entry) => [entry.member, formatDouble(entry.score)])
    : entries.map((e) => e.member);
}

function limit<T>(entries: T[], offset: number, count: number): T[] {
  if (offset < 0) return [];
  return count < 0 ? entries.slice(offset) : entries.slice(offset, offset + count);
}

function byScore(keys: Keyspace, args: readonly string[], reverse: boolean): Reply {
  const set = keys.read(at(args, 0), 'zset');
  const first = scoreBound(at(args, 1));
  const second = scoreBound(at(args, 2));
  const [min, max] = reverse ? [second, first] : [first, second];
  const options = rangeOptions(args.slice(3), true);
  if (!set) return [];
  let entries = set.order.filter((entry) => aboveMin(entry.score, min) && belowMax(entry.score, max));
  if (reverse) entries = entries.reverse();
  return reply(limit(entries, options.offset, options.count), options.withScores);
}

function byIndex(keys: Keyspace, args: readonly string[], reverse: boolean): Reply {
  const set = keys.read(at(args, 0), 'zset');
  const [start, stop] = indexRange(set?.order.length ?? 0, at(args, 1), at(args, 2));
  const options = rangeOptions(args.slice(3), false);
  if (!set || start > stop) return [];
  const entries = reverse ? [...set.order].reverse() : set.order;
  return reply(entries.slice(start, stop + 1), options.withScores);
}

function add(keys: Keyspace, args: readonly string[]): Reply {
  const key = at(args, 0);
  let index = 1;
  const flags = new Set<string>();
  while (
    index < args.length &&
    ['NX', 'XX', 'GT', 'LT', 'CH', 'INCR'].includes((args[index] as string).toUpperCase())
  ) {
    flags.add((args[index] as string).toUpperCase());
    index++;
  }
  const rest = args.slice(index);
  if (rest.length === 0 || rest.length % 2 !== 0) fail(errors.syntax());
  if (flags.has('NX') && flags.has('XX'))
    fail(new ReplyError('ERR XX and NX options at the same time are not compatible'));
  if ((flags.has('GT') && flags.has('LT')) || (flags.has('NX') && (flags.has('GT') || flags.has('LT'))))
    fail(new ReplyError('ERR GT, LT, and/or NX options at the same time are not compatible'));
  if (flags.has('INCR') && rest.length !== 2)
    fail(new ReplyError('ERR INCR option supports a single increment-element pair'));
  const updates: [number, string][] = [];
  for (let pair = 0; pair < rest.length; pair += 2)
    updates.push([floatArgument(rest[pair] as string), rest[pair + 1] as string]);
  const set = keys.write(key, 'zset', newSortedSet);
  let added = 0;
  let changed = 0;
  let incremented: string | null = null;
  for (const [given, member] of updates) {
    const current = set.scores.get(member);
    if ((flags.has('NX') && current !== undefined) || (flags.has('XX') && current === undefined)) continue;
    const score = flags.has('INCR') ? (current ?? 0) + given : given;
    if (
      current !== undefined &&
      ((flags.has('GT') && score <= current) || (flags.has('LT') && score >= current))
    )
      continue;
    if (current === undefined) added++;
    else if (current !== score) changed++;
    insert(set, member, score);
    incremented = formatDouble(score);
  }
  keys.dropIfEmpty(key, set.scores.size);
  if (flags.has('INCR')) return incremented;
  return flags.has('CH') ? added + changed : added;
}

export const sortedSetCommands = table([
  ['ZADD', -4, true, ({ keys }, args) => add(keys, args)],
  [
    'ZINCRBY',
    4,
    true,
    ({ keys }, args) => {
      const set = keys.write(at(args, 0), 'zset', newSortedSet);
      const score = (set.scores.get(at(args, 2)) ?? 0) + floatArgument(at(args, 1));
      insert(set, at(args, 2), score);
      return formatDouble(score);
    },
  ],
  [
    'ZREM',
    -3,
    true,
    ({ keys }, args) => {
      const set = keys.read(at(args, 0), 'zset');
      if (!set) return 0;
      const removed = args.slice(1).filter((member) => remove(set, member)).length;
      keys.dropIfEmpty(at(args, 0), set.scores.size);
      return removed;
    },
  ],
  [
    'ZREMRANGEBYSCORE',
    4,
    true,
    ({ keys }, args) => {
      const set = keys.read(at(args, 0), 'zset');
      const min = scoreBound(at(args, 1));
      const max = scoreBound(at(args, 2));
      if (!set) return 0;
      const doomed = set.order.filter((entry) => aboveMin(entry.score, min) && belowMax(entry.score, max));
      for (const entry of doomed) remove(set, entry.member);
      keys.dropIfEmpty(at(args, 0), set.scores.size);
      return doomed.length;
    },
  ],
  [
    'ZREMRANGEBYRANK',
    4,
    true,
    ({ keys }, args) => {
      const set = keys.read(at(args, 0), 'zset');
      const [start, stop] = indexRange(set?.order.length ?? 0, at(args, 1), at(args, 2));
      if (!set || start > stop) return 0;
      const doomed = set.order.slice(start, stop + 1);
      for (const entry of doomed) remove(set, entry.member);
      keys.dropIfEmpty(at(args, 0), set.scores.size);
      return doomed.length;
    },
  ],
  ['ZCARD', 2, false, ({ keys }, args) => keys.read(at(args, 0), 'zset')?.scores.size ?? 0],
  [
    'ZSCORE',
    3,
    false,
    ({ keys }, args) => {
      const score = keys.read(at(args, 0), 'zset')?.scores.get(at(args, 1));
      return score === undefined ? null : formatDouble(score);
    },
  ],
  [
    'ZCOUNT',
    4,
    false,
    ({ keys }, args) => {
      const set = keys.read(at(args, 0), 'zset');
      const min = scoreBound(at(args, 1));
      const max = scoreBound(at(args, 2));
      return (
        set?.order.filter((entry) => aboveMin(entry.score, min) && belowMax(entry.score, max)).length ?? 0
      );
    },
  ],
  ['ZRANGE', -4, false, ({ keys }, args) => byIndex(keys, args, false)],
  ['ZREVRANGE', -4, false, ({ keys }, args) => byIndex(keys, args, true)],
  ['ZRANGEBYSCORE', -4, false, ({ keys }, args) => byScore(keys, args, false)],
  ['ZREVRANGEBYSCORE', -4, false, ({ keys }, args) => byScore(keys, args, true)],
]);

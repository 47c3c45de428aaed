/** Hashes, sets and lists. */
import { at, indexRange, pairs, table } from './commands.js';
import type { Keyspace } from './keyspace.js';
import { fail, floatArgument, integerArgument, OK, type Reply, ReplyError } from './reply.js';

const newHash = () => new Map<string, string>();
const newSet = () => new Set<string>();
const newList = (): string[] => [];

function hashSet(keys: Keyspace, key: string, fields: [string, string][]): number {
  const hash = keys.write(key, 'hash', newHash);
  let added = 0;
  for (const [field, value] of fields) {
    if (!hash.has(field)) added++;
    hash.set(field, value);
  }
  return added;
}

function hashIncrement(keys: Keyspace, key: string, field: string, by: number): number {
  const current = keys.read(key, 'hash')?.get(field);
  let value = 0;
  if (current !== undefined) {
    try {
      value = integerArgument(current);
    } catch {
      fail(new ReplyError('ERR hash value is not an integer'));
    }
  }
  const next = value + by;
  if (!Number.isSafeInteger(next)) fail(new ReplyError('ERR increment or decrement would overflow'));
  keys.write(key, 'hash', newHash).set(field, String(next));
  return next;
}

export const collectionCommands = table([
  ['HGET', 3, false, ({ keys }, args) => keys.read(at(args, 0), 'hash')?.get(at(args, 1)) ?? null],
  ['HSET', -4, true, ({ keys }, args) => hashSet(keys, at(args, 0), pairs(args.slice(1), 'hset'))],
  [
    'HMSET',
    -4,
    true,
    ({ keys }, args) => {
      hashSet(keys, at(args, 0), pairs(args.slice(1), 'hmset'));
      return OK;
    },
  ],
  [
    'HSETNX',
    4,
    true,
    ({ keys }, args) => {
      if (keys.read(at(args, 0), 'hash')?.has(at(args, 1))) return 0;
      keys.write(at(args, 0), 'hash', newHash).set(at(args, 1), at(args, 2));
      return 1;
    },
  ],
  [
    'HMGET',
    -3,
    false,
    ({ keys }, args) => {
      const hash = keys.read(at(args, 0), 'hash');
      return args.slice(1).map((field) => hash?.get(field) ?? null);
    },
  ],
  ['HGETALL', 2, false, ({ keys }, args) => [...(keys.read(at(args, 0), 'hash') ?? newHash())].flat()],
  ['HKEYS', 2, false, ({ keys }, args) => [...(keys.read(at(args, 0), 'hash')?.keys() ?? [])]],
  ['HVALS', 2, false, ({ keys }, args) => [...(keys.read(at(args, 0), 'hash')?.values() ?? [])]],
  ['HLEN', 2, false, ({ keys }, args) => keys.read(at(args, 0), 'hash')?.size ?? 0],
  ['HEXISTS', 3, false, ({ keys }, args) => (keys.read(at(args, 0), 'hash')?.has(at(args, 1)) ? 1 : 0)],
  [
    'HDEL',
    -3,
    true,
    ({ keys }, args) => {
      const hash = keys.read(at(args, 0), 'hash');
      if (!hash) return 0;
      const removed = args.slice(1).filter((field) => hash.delete(field)).length;
      keys.dropIfEmpty(at(args, 0), hash.size);
      return removed;
    },
  ],
  [
    'HINCRBY',
    4,
    true,
    ({ keys }, args) => hashIncrement(keys, at(args, 0), at(args, 1), integerArgument(at(args, 2))),
  ],
  [
    'HINCRBYFLOAT',
    4,
    true,
    ({ keys }, args) => {
      const current = keys.read(at(args, 0), 'hash')?.get(at(args, 1));
      const value = current === undefined ? 0 : floatArgument(current);
      const next = value + floatArgument(at(args, 2));
      if (!Number.isFinite(next)) fail(new ReplyError('ERR increment would produce NaN or Infinity'));
      const text = formatIncrement(next);
      keys.write(at(args, 0), 'hash', newHash).set(at(args, 1), text);
      return text;
    },
  ],
  [
    'SADD',
    -3,
    true,
    ({ keys }, args) => {
      const set = keys.write(at(args, 0), 'set', newSet);
      let added = 0;
      for (const member of args.slice(1)) {
        if (!set.has(member)) added++;
        set.add(member);
      }
      return added;
    },
  ],
  [
    'SREM',
    -3,
    true,
    ({ keys }, args) => {
      const set = keys.read(at(args, 0), 'set');
      if (!set) return 0;
      const removed = args.slice(1).filter((member) => set.delete(member)).length;
      keys.dropIfEmpty(at(args, 0), set.size);
      return removed;
    },
  ],
  ['SCARD', 2, false, ({ keys }, args) => keys.read(at(args, 0), 'set')?.size ?? 0],
  ['SISMEMBER', 3, false, ({ keys }, args) => (keys.read(at(args, 0), 'set')?.has(at(args, 1)) ? 1 : 0)],
  [
    'SMISMEMBER',
    -3,
    false,
    ({ keys }, args) => {
      const set = keys.read(at(args, 0), 'set');
      return args.slice(1).map((member) => (set?.has(member) ? 1 : 0));
    },
  ],
  ['SMEMBERS', 2, false, ({ keys }, args) => [...(keys.read(at(args, 0), 'set') ?? [])]],
  ['LPUSH', -3, true, ({ keys }, args) => push(keys, at(args, 0), args.slice(1), 'left')],
  ['RPUSH', -3, true, ({ keys }, args) => push(keys, at(args, 0), args.slice(1), 'right')],
  ['LLEN', 2, false, ({ keys }, args) => keys.read(at(args, 0), 'list')?.length ?? 0],
  [
    'LRANGE',
    4,
    false,
    ({ keys }, args): Reply => {
      const list = keys.read(at(args, 0), 'list') ?? [];
      const [start, stop] = indexRange(list.length, at(args, 1), at(args, 2));
      return start > stop ? [] : list.slice(start, stop + 1);
    },
  ],
  [
    'LTRIM',
    4,
    true,
    ({ keys }, args) => {
      const list = keys.read(at(args, 0), 'list');
      if (!list) return OK;
      const [start, stop] = indexRange(list.length, at(args, 1), at(args, 2));
      const kept = start > stop ? [] : list.slice(start, stop + 1);
      list.splice(0, list.length, ...kept);
      keys.dropIfEmpty(at(args, 0), list.length);
      return OK;
    },
  ],
]);

function push(keys: Keyspace, key: string, values: readonly string[], side: 'left' | 'right'): number {
  const list = keys.write(key, 'list', newList);
  for (const value of values) {
    if (side === 'left') list.unshift(value);
    else list.push(value);
  }
  return list.length;
}

/** HINCRBYFLOAT's text: `%.17Lg` with trailing zeros removed, never an exponent below 1e17. */
function formatIncrement(value: number): string {
  if (Number.isInteger(value)) return String(value);
  return String(Number(value.toPrecision(17)));
}

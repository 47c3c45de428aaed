/** Commands on keys of any type, and strings. */
import { at, globMatches, table } from './commands.js';
import type { Keyspace } from './keyspace.js';
import { errors, fail, integerArgument, OK, type Reply, ReplyError, Status } from './reply.js';

function deleteKeys(keys: Keyspace, names: readonly string[]): number {
  let removed = 0;
  for (const name of names) if (keys.exists(name) && keys.delete(name)) removed++;
  return removed;
}

/** SET's options after the value: NX|XX, EX|PX|EXAT|PXAT, KEEPTTL, GET. */
function setOptions(args: readonly string[], now: number) {
  let condition: 'NX' | 'XX' | undefined;
  let expireAt: number | undefined;
  let keepTtl = false;
  let get = false;
  for (let index = 0; index < args.length; index++) {
    const option = (args[index] as string).toUpperCase();
    if ((option === 'NX' || option === 'XX') && condition === undefined) condition = option;
    else if (option === 'GET' && !get) get = true;
    else if (option === 'KEEPTTL' && expireAt === undefined) keepTtl = true;
    else if (['EX', 'PX', 'EXAT', 'PXAT'].includes(option) && expireAt === undefined && !keepTtl) {
      const amount = integerArgument(args[++index] ?? fail(errors.syntax()));
      if (amount <= 0) fail(new ReplyError("ERR invalid expire time in 'set' command"));
      expireAt =
        option === 'EX'
          ? now + amount * 1000
          : option === 'PX'
            ? now + amount
            : option === 'EXAT'
              ? amount * 1000
              : amount;
    } else fail(errors.syntax());
  }
  return { condition, expireAt, keepTtl, get };
}

export const keyCommands = table([
  ['DEL', -2, true, ({ keys }, args) => deleteKeys(keys, args)],
  ['UNLINK', -2, true, ({ keys }, args) => deleteKeys(keys, args)],
  ['EXISTS', -2, false, ({ keys }, args) => args.filter((name) => keys.exists(name)).length],
  [
    'TYPE',
    2,
    false,
    ({ keys }, args) => {
      const found = keys.lookup(at(args, 0));
      return new Status(found ? found.type : 'none');
    },
  ],
  ['PEXPIREAT', -3, true, ({ keys }, args) => expire(keys, args, (amount) => amount)],
  ['EXPIREAT', -3, true, ({ keys }, args) => expire(keys, args, (amount) => amount * 1000)],
  ['PEXPIRE', -3, true, ({ keys }, args) => expire(keys, args, (amount) => keys.clock.now() + amount)],
  ['EXPIRE', -3, true, ({ keys }, args) => expire(keys, args, (amount) => keys.clock.now() + amount * 1000)],
  ['PTTL', 2, false, ({ keys }, args) => keys.timeToLive(at(args, 0))],
  [
    'TTL',
    2,
    false,
    ({ keys }, args) => {
      const ms = keys.timeToLive(at(args, 0));
      return ms < 0 ? ms : Math.round(ms / 1000);
    },
  ],
  ['KEYS', 2, false, ({ keys }, args) => [...keys.keys()].filter((key) => globMatches(at(args, 0), key))],
  ['DBSIZE', 1, false, ({ keys }) => [...keys.keys()].length],
  [
    'FLUSHALL',
    -1,
    true,
    ({ keys }) => {
      keys.flush();
      return OK;
    },
  ],
  [
    'FLUSHDB',
    -1,
    true,
    ({ keys }) => {
      keys.flush();
      return OK;
    },
  ],
  ['GET', 2, false, ({ keys }, args) => keys.read(at(args, 0), 'string') ?? null],
  [
    'SET',
    -3,
    true,
    ({ keys }, args): Reply => {
      const key = at(args, 0);
      const options = setOptions(args.slice(2), keys.clock.now());
      const previous = options.get ? (keys.read(key, 'string') ?? null) : undefined;
      const present = keys.exists(key);
      if ((options.condition === 'NX' && present) || (options.condition === 'XX' && !present)) {
        return previous === undefined ? null : previous;
      }
      const ttl = options.keepTtl ? keys.timeToLive(key) : -1;
      keys.setString(key, at(args, 1));
      if (options.expireAt !== undefined) keys.expireAt(key, options.expireAt);
      else if (ttl > 0) keys.expireAt(key, keys.clock.now() + ttl);
      return previous === undefined ? OK : previous;
    },
  ],
  ['INCR', 2, true, ({ keys }, args) => incrementBy(keys, at(args, 0), 1)],
  ['DECR', 2, true, ({ keys }, args) => incrementBy(keys, at(args, 0), -1)],
  ['INCRBY', 3, true, ({ keys }, args) => incrementBy(keys, at(args, 0), integerArgument(at(args, 1)))],
  ['DECRBY', 3, true, ({ keys }, args) => incrementBy(keys, at(args, 0), -integerArgument(at(args, 1)))],
]);

/**
 * EXPIRE, PEXPIRE, EXPIREAT, PEXPIREAT: `at` turns the amount into ms since the epoch; NX (no
 * expiry yet), XX (one already), GT and LT (later or earlier than the current one; none counts
 * as forever) make it conditional, as in Redis 7. 1 when set, 0 when not (or no key).
 */
function expire(keys: Keyspace, args: readonly string[], at: (amount: number) => number): number {
  const key = args[0] as string;
  const when = at(integerArgument(args[1] as string));
  const flags = new Set(args.slice(2).map((flag) => flag.toUpperCase()));
  if ([...flags].some((flag) => !['NX', 'XX', 'GT', 'LT'].includes(flag))) {
    fail(
      new ReplyError(
        `ERR Unsupported option ${args.slice(2).find((flag) => !['NX', 'XX', 'GT', 'LT'].includes(flag.toUpperCase()))}`,
      ),
    );
  }
  if (flags.has('NX') && flags.size > 1) {
    fail(new ReplyError('ERR NX and XX, GT or LT options at the same time are not compatible'));
  }
  if (flags.has('GT') && flags.has('LT')) {
    fail(new ReplyError('ERR GT and LT options at the same time are not compatible'));
  }
  const ttl = keys.timeToLive(key);
  if (ttl === -2) return 0;
  const current = ttl === -1 ? Number.POSITIVE_INFINITY : keys.clock.now() + ttl;
  if (flags.has('NX') && ttl !== -1) return 0;
  if (flags.has('XX') && ttl === -1) return 0;
  if (flags.has('GT') && !(when > current)) return 0;
  if (flags.has('LT') && !(when < current)) return 0;
  return keys.expireAt(key, when) ? 1 : 0;
}

function incrementBy(keys: Keyspace, key: string, by: number): number {
  const current = keys.read(key, 'string');
  const value = current === undefined ? 0 : integerArgument(current);
  const next = value + by;
  if (!Number.isSafeInteger(next)) fail(new ReplyError('ERR increment or decrement would overflow'));
  const ttl = keys.timeToLive(key);
  keys.setString(key, String(next));
  if (ttl > 0) keys.expireAt(key, keys.clock.now() + ttl);
  return next;
}

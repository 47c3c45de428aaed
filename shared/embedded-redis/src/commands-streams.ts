/** Streams: entries by id `<ms>-<seq>`, ids only grow (XADD), ranges and trims by id. */
import { at, table } from './commands.js';
import type { Keyspace, StreamEntry, StreamValue } from './keyspace.js';
import { errors, fail, integerArgument, type Reply, ReplyError } from './reply.js';

/**
 * 2^64 - 1, the largest part of an id. Parts are JS numbers: exact up to 2^53, which no id the
 * engine generates reaches; larger ones (`+`, a bound a client computes as `<ms>-<2^64-1>`) only
 * bound ranges, where order is all that counts.
 */
const MAX_PART = 2n ** 64n - 1n;
const MAX_SEQUENCE = Number(MAX_PART);
const newStream = (): StreamValue => ({ entries: [], lastMs: 0, lastSeq: 0 });
const invalidId = () => new ReplyError('ERR Invalid stream ID specified as stream command argument');

interface Id {
  ms: number;
  seq: number;
}

function compareIds(a: Id, b: Id): number {
  return a.ms !== b.ms ? a.ms - b.ms : a.seq - b.seq;
}

function idText(entry: Id): string {
  return `${entry.ms}-${entry.seq}`;
}

function part(text: string): number {
  if (!/^\d{1,20}$/.test(text) || BigInt(text) > MAX_PART) fail(invalidId());
  return Number(text);
}

/** An id argument; a missing sequence is `missingSequence` (0 for a start, max for an end). */
function parseId(text: string, missingSequence: number): Id {
  const dash = text.indexOf('-');
  if (dash === -1) return { ms: part(text), seq: missingSequence };
  return { ms: part(text.slice(0, dash)), seq: part(text.slice(dash + 1)) };
}

/** XRANGE's bounds: `-`, `+`, `(id` exclusive, an id without sequence. */
function bound(text: string, side: 'start' | 'end'): Id | undefined {
  if (text === '-') return { ms: 0, seq: 0 };
  if (text === '+') return { ms: MAX_SEQUENCE, seq: MAX_SEQUENCE };
  if (text.startsWith('(')) {
    const id = parseId(text.slice(1), side === 'start' ? 0 : MAX_SEQUENCE);
    if (side === 'start')
      return id.seq === MAX_SEQUENCE ? { ms: id.ms + 1, seq: 0 } : { ms: id.ms, seq: id.seq + 1 };
    if (id.ms === 0 && id.seq === 0) return undefined;
    return id.seq === 0 ? { ms: id.ms - 1, seq: MAX_SEQUENCE } : { ms: id.ms, seq: id.seq - 1 };
  }
  return parseId(text, side === 'start' ? 0 : MAX_SEQUENCE);
}

/** Index of the first entry whose id is not below `id`. */
function firstFrom(entries: readonly StreamEntry[], id: Id): number {
  let low = 0;
  let high = entries.length;
  while (low < high) {
    const middle = (low + high) >>> 1;
    if (compareIds(entries[middle] as StreamEntry, id) < 0) low = middle + 1;
    else high = middle;
  }
  return low;
}

function entryReply(entry: StreamEntry): Reply {
  return [idText(entry), [...entry.fields]];
}

function count(args: readonly string[]): number {
  if (args.length === 0) return -1;
  if (args.length !== 2 || (args[0] as string).toUpperCase() !== 'COUNT') fail(errors.syntax());
  return integerArgument(args[1] as string);
}

function range(keys: Keyspace, args: readonly string[], reverse: boolean): Reply {
  const stream = keys.read(at(args, 0), 'stream');
  const [startText, endText] = reverse ? [at(args, 2), at(args, 1)] : [at(args, 1), at(args, 2)];
  const start = bound(startText, 'start');
  const end = bound(endText, 'end');
  const limit = count(args.slice(3));
  if (limit === 0) return null;
  if (!stream || !start || !end || compareIds(start, end) > 0) return [];
  const from = firstFrom(stream.entries, start);
  const upto = firstFrom(stream.entries, { ms: end.ms, seq: end.seq + 1 });
  const slice = reverse ? stream.entries.slice(from, upto).reverse() : stream.entries.slice(from, upto);
  return (limit < 0 ? slice : slice.slice(0, limit)).map(entryReply);
}

/** MAXLEN|MINID [=|~] threshold [LIMIT n], parsed from `args[index]`; returns the next index. */
function trimOption(args: readonly string[], index: number) {
  const strategy = (at(args, index) as string).toUpperCase() as 'MAXLEN' | 'MINID';
  let next = index + 1;
  if (args[next] === '=' || args[next] === '~') next++;
  const threshold = at(args, next++);
  if ((args[next] ?? '').toUpperCase() === 'LIMIT') next += 2;
  return { strategy, threshold, next };
}

/**
 * Removes entries as XTRIM does. `~` is honoured as `=` here: Redis may then keep a few more
 * entries (whole radix-tree nodes), never fewer, so a caller cannot rely on the difference.
 */
function trim(stream: StreamValue, strategy: 'MAXLEN' | 'MINID', threshold: string): number {
  let cut = 0;
  if (strategy === 'MAXLEN') {
    const length = integerArgument(threshold);
    if (length < 0) fail(new ReplyError('ERR The MAXLEN argument must be >= 0.'));
    cut = Math.max(0, stream.entries.length - length);
  } else cut = firstFrom(stream.entries, parseId(threshold, 0));
  stream.entries.splice(0, cut);
  return cut;
}

function nextId(stream: StreamValue, text: string, now: number): Id {
  const last = { ms: stream.lastMs, seq: stream.lastSeq };
  if (text === '*') {
    return now > last.ms ? { ms: now, seq: 0 } : { ms: last.ms, seq: last.seq + 1 };
  }
  const tooSmall = () =>
    new ReplyError('ERR The ID specified in XADD is equal or smaller than the target stream top item');
  if (text.endsWith('-*')) {
    const ms = part(text.slice(0, -2));
    if (ms < last.ms || (ms === last.ms && last.seq === MAX_SEQUENCE)) fail(tooSmall());
    return ms === last.ms ? { ms, seq: last.seq + 1 } : { ms, seq: 0 };
  }
  const id = parseId(text, 0);
  if (id.ms === 0 && id.seq === 0)
    fail(new ReplyError('ERR The ID specified in XADD must be greater than 0-0'));
  if (compareIds(id, last) <= 0) fail(tooSmall());
  return id;
}

export const streamCommands = table([
  [
    'XADD',
    -5,
    true,
    ({ keys }, args) => {
      const key = at(args, 0);
      let index = 1;
      let noCreate = false;
      let trimming: { strategy: 'MAXLEN' | 'MINID'; threshold: string } | undefined;
      for (;;) {
        const option = at(args, index).toUpperCase();
        if (option === 'NOMKSTREAM') {
          noCreate = true;
          index++;
        } else if (option === 'MAXLEN' || option === 'MINID') {
          const parsed = trimOption(args, index);
          trimming = parsed;
          index = parsed.next;
        } else break;
      }
      const idArgument = at(args, index);
      const fields = args.slice(index + 1);
      if (fields.length === 0 || fields.length % 2 !== 0) fail(errors.arity('xadd'));
      if (noCreate && !keys.exists(key)) return null;
      const existing = keys.read(key, 'stream');
      const id = nextId(existing ?? newStream(), idArgument, keys.clock.now());
      const stream = existing ?? keys.write(key, 'stream', newStream);
      stream.entries.push({ ms: id.ms, seq: id.seq, fields });
      stream.lastMs = id.ms;
      stream.lastSeq = id.seq;
      if (trimming) trim(stream, trimming.strategy, trimming.threshold);
      return idText(id);
    },
  ],
  ['XRANGE', -4, false, ({ keys }, args) => range(keys, args, false)],
  ['XREVRANGE', -4, false, ({ keys }, args) => range(keys, args, true)],
  ['XLEN', 2, false, ({ keys }, args) => keys.read(at(args, 0), 'stream')?.entries.length ?? 0],
  [
    'XDEL',
    -3,
    true,
    ({ keys }, args) => {
      const ids = args.slice(1).map((text) => parseId(text, 0));
      const stream = keys.read(at(args, 0), 'stream');
      if (!stream) return 0;
      let removed = 0;
      for (const id of ids) {
        const index = firstFrom(stream.entries, id);
        const found = stream.entries[index];
        if (found && compareIds(found, id) === 0) {
          stream.entries.splice(index, 1);
          removed++;
        }
      }
      return removed;
    },
  ],
  [
    'XTRIM',
    -4,
    true,
    ({ keys }, args) => {
      const option = trimOption(args, 1);
      if (option.next !== args.length) fail(errors.syntax());
      const stream = keys.read(at(args, 0), 'stream');
      return stream ? trim(stream, option.strategy, option.threshold) : 0;
    },
  ],
]);

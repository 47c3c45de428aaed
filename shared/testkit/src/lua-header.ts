/*
 * One header format and one naming rule for the scripts of both services (issue #23, item 3;
 * shared/redis/README.md, "Lua scripts"). A script file is `<name>-<numberOfKeys>.lua`, `<name>`
 * in kebab-case, and opens with a `--[[ … ]]` block that lists, one entry a line:
 *
 *   KEYS[i]      name: meaning        (every key index from 1 to numberOfKeys)
 *   KEYS[i..]    name: meaning        (the rest, for a script taking one key per queue touched)
 *   ARGV[i]      name: meaning        (ARGV[i..] and ARGV[i..j] for groups)
 *   Returns …
 *   Resend-safe: …                    (why a second run with the same ARGV is harmless)
 *
 * An entry starts at the block's indentation (two spaces at most); deeper lines continue it.
 * `headerProblems` parses that block and the script's code (its includes expanded): every
 * literal KEYS[i]/ARGV[i] the code reads must be listed, and KEYS, ARGV read as a whole
 * (`#ARGV`, `unpack(ARGV, 2)`) or at a computed index need an open entry (`ARGV[i..]`).
 */
import type luaparse from 'luaparse';
import { type LoadedScript, parseLua, walk } from './lua-tree.js';

type Table = 'KEYS' | 'ARGV';

interface Entry {
  readonly table: Table;
  readonly from: number;
  /** Last index covered; Infinity for an open entry (`ARGV[3..]`). */
  readonly to: number;
}

const KEBAB_CASE = /^[a-z][a-z0-9]*(?:-[a-z0-9]+)*$/;
const ENTRY = /^ {0,2}(KEYS|ARGV)\[(\d+)(?:\.\.(\d+|n)?)?\]\s+(.*)$/;
const NAMED = /^[A-Za-z][\w-]*:\s+\S/;

/** The naming rule: `<name>-<numberOfKeys>.lua`, `<name>` in kebab-case. */
export function nameProblems(script: LoadedScript): string[] {
  return KEBAB_CASE.test(script.name)
    ? []
    : [`${script.name}-${script.numberOfKeys}.lua: the name is not kebab-case (<name>-<numberOfKeys>.lua)`];
}

/** The header's entries, or the problems that keep it from being read. */
function readHeader(file: string, source: string): { entries: Entry[]; problems: string[] } {
  const problems: string[] = [];
  const entries: Entry[] = [];
  const block = /^--\[\[\n([\s\S]*?)\n\]\]/.exec(source);
  if (!block) return { entries, problems: [`${file}: does not open with a --[[ … ]] header`] };
  const lines = (block[1] as string).split('\n');
  for (const line of lines) {
    const entry = ENTRY.exec(line);
    if (!entry) continue;
    const [, table, from, to, rest] = entry as unknown as [string, Table, string, string | undefined, string];
    if (!NAMED.test(rest)) problems.push(`${file}: header entry "${line.trim()}" is not "<name>: <meaning>"`);
    const start = Number(from);
    const end =
      to === undefined
        ? line.includes('..')
          ? Number.POSITIVE_INFINITY
          : start
        : to === 'n'
          ? Number.POSITIVE_INFINITY
          : Number(to);
    entries.push({ table, from: start, to: end });
  }
  if (!lines.some((line) => /^\s*Returns\b/.test(line)))
    problems.push(`${file}: the header has no Returns line`);
  if (!lines.some((line) => /^\s*Resend-safe: \S/.test(line))) {
    problems.push(`${file}: the header has no "Resend-safe: …" line`);
  }
  return { entries, problems };
}

/** Header problems of one script: the format above, and indexes its code reads that it does not list. */
export function headerProblems(script: LoadedScript): string[] {
  const file = `${script.name}-${script.numberOfKeys}.lua`;
  const { entries, problems } = readHeader(file, script.source);
  const covers = (table: Table, index: number) =>
    entries.some((entry) => entry.table === table && entry.from <= index && index <= entry.to);
  const open = (table: Table) =>
    entries.some((entry) => entry.table === table && entry.to === Number.POSITIVE_INFINITY);
  for (let index = 1; index <= script.numberOfKeys; index++) {
    if (!covers('KEYS', index)) problems.push(`${file}: KEYS[${index}] is not in the header`);
  }
  const reported = new Set<string>();
  const report = (problem: string) => {
    if (!reported.has(problem)) problems.push(problem);
    reported.add(problem);
  };
  const indexed = new Set<luaparse.Node>();
  const chunk = parseLua(script.source);
  walk(chunk, (node) => {
    if (node.type !== 'IndexExpression' || node.base.type !== 'Identifier') return;
    const table = node.base.name;
    if (table !== 'KEYS' && table !== 'ARGV') return;
    indexed.add(node.base);
    const line = node.loc?.start.line ?? 0;
    if (node.index.type === 'NumericLiteral') {
      const index = node.index.value;
      if (!covers(table, index)) report(`${file}:${line} ${table}[${index}] is read but not in the header`);
      if (table === 'KEYS' && index > script.numberOfKeys && !open('KEYS')) {
        report(`${file}:${line} KEYS[${index}] is read but the file name says ${script.numberOfKeys} keys`);
      }
    } else if (!open(table)) {
      report(
        `${file}:${line} ${table} is read at a computed index: the header needs an open entry (${table}[i..])`,
      );
    }
  });
  walk(chunk, (node) => {
    if (node.type !== 'Identifier' || indexed.has(node)) return;
    if ((node.name === 'KEYS' || node.name === 'ARGV') && !open(node.name)) {
      report(
        `${file}:${node.loc?.start.line ?? 0} ${node.name} is read as a whole: the header needs an open entry (${node.name}[i..])`,
      );
    }
  });
  return problems;
}

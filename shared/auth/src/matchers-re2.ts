import { channel } from 'node:diagnostics_channel';
import { RE2JS } from 're2js';

/**
 * Every topic selector that is not Exact ends up as one or more RE2 programs (re2js). RE2 matches
 * in time linear in the topic, but the constant is the program size: re2js' lazy DFA and its
 * NFA fallback both do work proportional to the instructions alive at each character, so a
 * program of n instructions costs up to ~n × topic length steps per match (measured: ~30 ns per
 * instruction × character on the worst patterns). Compiling is ~2.5 µs per instruction too, and
 * RE2 expands counted repetitions, so a 4 KiB pattern of `a{1000}` compiled to 585,000
 * instructions: 1.5 s of blocked event loop and ~40 MiB of heap (issue #8, defect 3).
 *
 * Hence three bounds, all refused as an invalid pattern (400, generic message; docs/hub.md,
 * "Limits"): a conservative size estimate read off the pattern's syntax BEFORE compiling (so a
 * refused pattern costs a linear scan, never a compile), the compiled program size after, and a
 * per-program cap on the lazy DFA's state cache (8 MiB by default in re2js, per program).
 */

/** Largest program (RE2 instructions) one selector may compile to; a URL pattern sums its components. */
export const MAX_PROGRAM_SIZE = 1000;
/** Largest count in `{n}`, `{n,}`, `{n,m}`: past it a pattern is refused before any estimate. */
export const MAX_REPEAT_COUNT = 100;
/** Deepest group nesting a pattern may use. */
export const MAX_NESTING_DEPTH = 20;
/**
 * The lazy DFA's state-cache budget per program, in re2js' own byte accounting. Legitimate
 * topic patterns need a handful of states; past the budget re2js flushes the cache and, when
 * flushing does not pay, falls back to its NFA: still linear, so this caps memory, not speed.
 */
export const DFA_BUDGET_BYTES = 32 * 1024;
/**
 * Heap per compiled instruction (program, one-pass copy, DFA rune classes), measured at ~170
 * bytes; and the heap a DFA at its budget holds, measured at ~47 KiB for the 32 KiB budget (re2js
 * under-counts its objects). Used to weigh a compiled selector in the selector cache.
 */
export const BYTES_PER_INSTRUCTION = 200;
const DFA_HEAP_BYTES = 56 * 1024;

export class PatternTooComplexError extends Error {
  override readonly name = 'PatternTooComplexError';
}

export class Re2SyntaxError extends Error {
  override readonly name = 'Re2SyntaxError';
}

export interface BoundedProgram {
  /** Whether the program matches the whole text. */
  readonly test: (text: string) => boolean;
  /** RE2 instructions. */
  readonly programSize: number;
  /** Estimated heap this program can hold, its DFA budget included. */
  readonly memoryBytes: number;
}

interface Frame {
  /** Size of the completed alternatives of this group. */
  completed: number;
  /** Alternatives so far (each `|` costs one ALT instruction). */
  alternatives: number;
  /** Size of the alternative being read. */
  sequence: number;
  /** Size of the last atom of the sequence: what a following quantifier repeats (0: none). */
  lastAtom: number;
}

const REPEAT = /^\{(\d+)(?:(,)(\d*))?\}/;
const FLAGS_ONLY_GROUP = /^\(\?[A-Za-z-]*\)/;
const GROUP_HEADER = /^\(\?(?:[A-Za-z-]*:|P?<[^>]*>)/;

function newFrame(): Frame {
  return { completed: 0, alternatives: 0, sequence: 0, lastAtom: 0 };
}

/** Index just past a `{…}` argument of `\p`, `\P` or `\x` at `index` (or past one character). */
function skipEscapeArgument(source: string, index: number): number {
  if (source[index] === '{') {
    const end = source.indexOf('}', index);
    if (end < 0) throw new Re2SyntaxError('unclosed escape');
    return end + 1;
  }
  return index + 1;
}

/** Index just past the character class opening at `index` (`[`). */
function skipClass(source: string, index: number): number {
  let position = index + 1;
  if (source[position] === '^') position += 1;
  if (source[position] === ']') position += 1;
  while (position < source.length) {
    const char = source[position];
    if (char === ']') return position + 1;
    if (char === '\\') {
      const escaped = source[position + 1];
      position =
        escaped === 'p' || escaped === 'P' || escaped === 'x'
          ? skipEscapeArgument(source, position + 2)
          : position + 2;
      continue;
    }
    if (char === '[' && source[position + 1] === ':') {
      const end = source.indexOf(':]', position + 2);
      if (end < 0) throw new Re2SyntaxError('unclosed class name');
      position = end + 2;
      continue;
    }
    position += 1;
  }
  throw new Re2SyntaxError('unclosed character class');
}

/**
 * An upper estimate of the RE2 program size of `source`, read off its syntax in one pass (RE2
 * syntax: what re2js accepts). Counted repetitions multiply the repeated atom, nested ones
 * multiply each other, as RE2's simplifier expands them. Throws PatternTooComplexError as soon as
 * the estimate passes `budget`, a count passes MAX_REPEAT_COUNT or nesting MAX_NESTING_DEPTH;
 * Re2SyntaxError for syntax it cannot read (RE2 would refuse it too).
 */
export function estimateProgramSize(source: string, budget = MAX_PROGRAM_SIZE): number {
  // Every program has a FAIL, a MATCH and the whole-match captures: 3 instructions, measured.
  const stack: Frame[] = [{ ...newFrame(), sequence: 3 }];
  const top = () => stack[stack.length - 1] as Frame;
  const total = () => {
    let sum = 0;
    for (const frame of stack) sum += frame.completed + frame.sequence + frame.alternatives;
    return sum;
  };
  const addAtom = (size: number) => {
    const frame = top();
    frame.sequence += size;
    frame.lastAtom = size;
    if (total() > budget) throw new PatternTooComplexError('program too large');
  };
  const repeatLast = (copies: number) => {
    const frame = top();
    if (frame.lastAtom === 0) return; // RE2 refuses a repeat of nothing; compile reports it
    // One copy per count plus an ALT per optional copy (RE2's simplifier expansion).
    const size = frame.lastAtom * Math.max(copies, 1) + copies + 1;
    frame.sequence += size - frame.lastAtom;
    frame.lastAtom = size;
    if (total() > budget) throw new PatternTooComplexError('program too large');
  };

  let index = 0;
  while (index < source.length) {
    const char = source[index] as string;
    switch (char) {
      case '\\': {
        const escaped = source[index + 1];
        if (escaped === undefined) throw new Re2SyntaxError('trailing backslash');
        if (escaped === 'Q') {
          const end = source.indexOf('\\E', index + 2);
          const literal = end < 0 ? source.length - index - 2 : end - index - 2;
          for (let count = 0; count < literal; count++) addAtom(1);
          index = end < 0 ? source.length : end + 2;
          continue;
        }
        index =
          escaped === 'p' || escaped === 'P' || escaped === 'x'
            ? skipEscapeArgument(source, index + 2)
            : index + 2;
        addAtom(1);
        continue;
      }
      case '[':
        index = skipClass(source, index);
        addAtom(1);
        continue;
      case '(': {
        const rest = source.slice(index, index + 64);
        const flagsOnly = FLAGS_ONLY_GROUP.exec(rest);
        if (flagsOnly) {
          // No atom: a repeat after `(?i)` applies to the atom before it, as RE2 parses it.
          index += flagsOnly[0].length;
          continue;
        }
        const header = GROUP_HEADER.exec(rest);
        index += header ? header[0].length : 1;
        if (stack.length > MAX_NESTING_DEPTH) throw new PatternTooComplexError('nesting too deep');
        stack.push(newFrame());
        continue;
      }
      case '|': {
        const frame = top();
        frame.completed += frame.sequence;
        frame.alternatives += 1;
        frame.sequence = 0;
        frame.lastAtom = 0;
        index += 1;
        continue;
      }
      case ')': {
        if (stack.length === 1) throw new Re2SyntaxError('unbalanced parenthesis');
        const frame = stack.pop() as Frame;
        // Alternatives, one ALT each, and two CAPTURE instructions (over-counted for `(?:`).
        const size = frame.completed + frame.sequence + frame.alternatives + 2;
        index += 1;
        addAtom(size);
        continue;
      }
      case '*':
      case '+':
      case '?':
        repeatLast(1);
        index += source[index + 1] === '?' ? 2 : 1;
        continue;
      case '{': {
        const repeat = REPEAT.exec(source.slice(index, index + 32));
        if (!repeat) {
          addAtom(1);
          index += 1;
          continue;
        }
        const minimum = Number(repeat[1]);
        const maximum =
          repeat[2] === undefined ? minimum : repeat[3] === '' ? minimum + 1 : Number(repeat[3]);
        if (minimum > MAX_REPEAT_COUNT || maximum > MAX_REPEAT_COUNT) {
          throw new PatternTooComplexError('repetition count too large');
        }
        repeatLast(maximum);
        index += repeat[0].length;
        if (source[index] === '?') index += 1;
        continue;
      }
      default: {
        // One instruction per code point (a surrogate pair is one rune).
        const codePoint = source.codePointAt(index) as number;
        index += codePoint > 0xffff ? 2 : 1;
        addAtom(1);
      }
    }
  }
  if (stack.length !== 1) throw new Re2SyntaxError('unclosed group');
  return total();
}

/**
 * Work accounting, for tests: "matching is linear in the topic" is checked by counting what the
 * engine does, not by timing it (a timing bound flakes on a loaded machine, and a fast machine
 * hides a slow algorithm). While `countEngineReads` runs, each program reads its text through a
 * String whose `charCodeAt` counts: every re2js engine (lazy DFA, NFA, one-pass, bit-state)
 * decodes the text one character at a time through `charCodeAt` in its inner loop, and that loop
 * does at most one program's worth of work per read. RE2 reads each position of the text once
 * per pass (the DFA, then the NFA when the DFA gives up), at most once per instruction in the
 * bit-state engine; a backtracking engine re-reads it once per path it tries. Outside
 * `countEngineReads` the text is passed as is: the production path costs one comparison.
 */
export class EngineReadLimitError extends Error {
  override readonly name = 'EngineReadLimitError';
}

interface ReadCounter {
  reads: number;
  readonly limit: number;
}

let readCounter: ReadCounter | undefined;

class CountedText extends String {
  constructor(
    text: string,
    private readonly counter: ReadCounter,
  ) {
    super(text);
  }

  override charCodeAt(index: number): number {
    this.counter.reads += 1;
    if (this.counter.reads > this.counter.limit) {
      // A runaway (backtracking) match stops here rather than running for minutes.
      throw new EngineReadLimitError(`more than ${this.counter.limit} character reads`);
    }
    return super.charCodeAt(index);
  }
}

/**
 * Runs `run` counting the characters every BoundedProgram reads meanwhile (see above); throws
 * EngineReadLimitError once they pass `limit`. Not reentrant across async work: for tests.
 */
export function countEngineReads<T>(
  run: () => T,
  limit = Number.POSITIVE_INFINITY,
): { result: T; reads: number } {
  const counter: ReadCounter = { reads: 0, limit };
  const outer = readCounter;
  readCounter = counter;
  try {
    return { result: run(), reads: counter.reads };
  } finally {
    readCounter = outer;
  }
}

/**
 * The costly steps of turning a client's pattern into a matcher, published on a diagnostics
 * channel as they happen (nothing is built or sent without a subscriber): an RE2 compile, with
 * the instructions it produced (published before the program-size check, so a compile that is
 * then refused counts too), and a URL pattern handed to the urlpattern-polyfill parser, which
 * runs the pattern's protocol part as a backtracking RegExp. The hub's flood test
 * (test/hub/pattern-flood.test.ts) subscribes inside the hub process and checks by counting,
 * not timing, that hostile patterns are refused before these steps.
 */
export const PATTERN_WORK_CHANNEL = 'herald:auth:pattern-work';

export type PatternWork =
  | { readonly stage: 're2-compile'; readonly instructions: number }
  | { readonly stage: 'urlpattern-parse'; readonly pattern: string };

const patternWork = channel(PATTERN_WORK_CHANNEL);

export function reportPatternWork(work: () => PatternWork): void {
  if (patternWork.hasSubscribers) patternWork.publish(work());
}

/**
 * Compiles `source` for whole-text matching within `budget` instructions: refuses before
 * compiling when the estimate is over, and after when the real program is (belt and braces:
 * the estimate is an upper bound by construction, the real size is what costs).
 */
export function compileBounded(source: string, budget = MAX_PROGRAM_SIZE): BoundedProgram {
  estimateProgramSize(source, budget);
  let compiled: RE2JS;
  try {
    compiled = RE2JS.compile(source);
  } catch {
    throw new Re2SyntaxError('the pattern does not compile');
  }
  const programSize = compiled.programSize();
  reportPatternWork(() => ({ stage: 're2-compile', instructions: programSize }));
  if (programSize > budget) throw new PatternTooComplexError('program too large');
  const dfa = compiled.re2Input.dfa;
  dfa.stateBudget = DFA_BUDGET_BYTES;
  dfa.memBudget = DFA_BUDGET_BYTES;
  dfa.maxMem = DFA_BUDGET_BYTES;
  return {
    test: (text) =>
      readCounter === undefined
        ? compiled.testExact(text)
        : // re2js takes a String object as it takes a string (its inputs read with charCodeAt).
          compiled.testExact(new CountedText(text, readCounter) as unknown as string),
    programSize,
    memoryBytes: programSize * BYTES_PER_INSTRUCTION + DFA_HEAP_BYTES,
  };
}

import { URLPattern } from 'urlpattern-polyfill/urlpattern';
import {
  type BoundedProgram,
  compileBounded,
  MAX_PROGRAM_SIZE,
  PatternTooComplexError,
  reportPatternWork,
} from './matchers-re2.js';

/**
 * URLPattern matching in linear time.
 *
 * Why not `new URLPattern(p).test(topic)` as is: the polyfill compiles each component to a
 * backtracking JavaScript RegExp, and a subscriber chooses the pattern. Measured here:
 * `https://example.com/*a*a*a*a*a*a*b` against an 80-character topic takes 4 s of blocked
 * event loop; the Mercure draft requires "a regular expression engine that guarantees
 * linear-time matching (such as RE2) or … a time limit" for URL patterns.
 *
 * So the polyfill does what it is good at (the WHATWG constructor-string parser, base-URL
 * inheritance, per-component canonicalisation and encoding), and we take its normalised
 * component pattern strings, parse them again with the spec's pattern-string parser
 * (https://urlpattern.spec.whatwg.org/#parse-a-pattern-string) and generate the spec's regular
 * expression for RE2 (re2js) instead of RegExp. A differential test checks the result against
 * the polyfill's own `test()` on cases where backtracking is harmless.
 *
 * Over 500 lines on purpose: the spec's tokenizer, pattern-string parser and regular-expression
 * generator are one algorithm (WHATWG URLPattern §1.4-1.6), kept in spec order in one file so it
 * can be read against the spec step by step.
 */

export class UrlPatternSyntaxError extends Error {
  override readonly name = 'UrlPatternSyntaxError';
}

type TokenType =
  | 'open'
  | 'close'
  | 'regexp'
  | 'name'
  | 'char'
  | 'escaped-char'
  | 'other-modifier'
  | 'asterisk'
  | 'end';

interface Token {
  readonly type: TokenType;
  readonly value: string;
}

// The spec's name code points: ID_Start/ID_Continue plus `$`, `_`, ZWNJ and ZWJ. Tested one code
// point at a time, so the joiners are alternatives, not a joined sequence.
const NAME_START = /^(?:[$_]|\p{ID_Start})$/u;
const NAME_PART = /^(?:[$_]|\u200C|\u200D|\p{ID_Continue})$/u;

function isAscii(char: string): boolean {
  return (char.codePointAt(0) ?? 0) <= 0x7f;
}

/** The spec's tokenizer with the "strict" policy: any invalid input is an error. */
function tokenize(input: string): Token[] {
  const chars = Array.from(input);
  const tokens: Token[] = [];
  let index = 0;
  while (index < chars.length) {
    const char = chars[index] as string;
    if (char === '*') {
      tokens.push({ type: 'asterisk', value: char });
      index += 1;
    } else if (char === '+' || char === '?') {
      tokens.push({ type: 'other-modifier', value: char });
      index += 1;
    } else if (char === '\\') {
      const escaped = chars[index + 1];
      if (escaped === undefined) throw new UrlPatternSyntaxError('trailing backslash');
      tokens.push({ type: 'escaped-char', value: escaped });
      index += 2;
    } else if (char === '{') {
      tokens.push({ type: 'open', value: char });
      index += 1;
    } else if (char === '}') {
      tokens.push({ type: 'close', value: char });
      index += 1;
    } else if (char === ':') {
      let end = index + 1;
      while (end < chars.length) {
        const next = chars[end] as string;
        if (!(end === index + 1 ? NAME_START : NAME_PART).test(next)) break;
        end += 1;
      }
      if (end === index + 1) throw new UrlPatternSyntaxError('missing parameter name');
      tokens.push({ type: 'name', value: chars.slice(index + 1, end).join('') });
      index = end;
    } else if (char === '(') {
      let depth = 1;
      let position = index + 1;
      let value = '';
      if (chars[position] === '?') throw new UrlPatternSyntaxError('group starts with ?');
      while (position < chars.length) {
        const current = chars[position] as string;
        if (!isAscii(current)) throw new UrlPatternSyntaxError('non-ASCII regexp');
        if (current === '\\') {
          const escaped = chars[position + 1];
          if (escaped === undefined || !isAscii(escaped)) {
            throw new UrlPatternSyntaxError('bad escape in regexp');
          }
          value += current + escaped;
          position += 2;
          continue;
        }
        if (current === ')') {
          depth -= 1;
          if (depth === 0) {
            position += 1;
            break;
          }
        } else if (current === '(') {
          depth += 1;
          // Capturing groups inside a custom regexp are forbidden by the spec.
          if (chars[position + 1] !== '?') throw new UrlPatternSyntaxError('capturing group');
        }
        value += current;
        position += 1;
      }
      if (depth !== 0) throw new UrlPatternSyntaxError('unbalanced regexp group');
      if (value === '') throw new UrlPatternSyntaxError('empty regexp group');
      tokens.push({ type: 'regexp', value });
      index = position;
    } else {
      tokens.push({ type: 'char', value: char });
      index += 1;
    }
  }
  tokens.push({ type: 'end', value: '' });
  return tokens;
}

type PartType = 'fixed' | 'regexp' | 'segment-wildcard' | 'full-wildcard';
type Modifier = '' | '?' | '*' | '+';

interface Part {
  readonly type: PartType;
  readonly value: string;
  readonly modifier: Modifier;
  readonly prefix: string;
  readonly suffix: string;
}

interface ComponentOptions {
  readonly delimiter: string;
  readonly prefix: string;
}

const DEFAULT_OPTIONS: ComponentOptions = { delimiter: '', prefix: '' };
const HOSTNAME_OPTIONS: ComponentOptions = { delimiter: '.', prefix: '' };
const PATHNAME_OPTIONS: ComponentOptions = { delimiter: '/', prefix: '/' };

/** The spec's "escape a regexp string". RE2 accepts every one of these escapes. */
function escapeRegexp(text: string): string {
  return text.replace(/[.+*?^${}()[\]|/\\]/g, '\\$&');
}

/** The JavaScript text of the spec's segment wildcard, used to classify parsed parts. */
function segmentWildcardSource(options: ComponentOptions): string {
  return `[^${escapeRegexp(options.delimiter)}]+?`;
}

const FULL_WILDCARD_SOURCE = '.*';

/** The spec's "parse a pattern string", with identity encoding (the input is already encoded). */
function parsePatternString(input: string, options: ComponentOptions): Part[] {
  const tokens = tokenize(input);
  const parts: Part[] = [];
  const names = new Set<string>();
  const segmentWildcard = segmentWildcardSource(options);
  let position = 0;
  let pendingFixed = '';
  let nextNumericName = 0;

  const tryConsume = (type: TokenType): string | undefined => {
    const token = tokens[position];
    if (token?.type !== type) return undefined;
    position += 1;
    return token.value;
  };
  const mustConsume = (type: TokenType): string => {
    const value = tryConsume(type);
    if (value === undefined) throw new UrlPatternSyntaxError(`expected ${type}`);
    return value;
  };
  const tryConsumeModifier = (): string | undefined => tryConsume('other-modifier') ?? tryConsume('asterisk');
  const consumeText = (): string => {
    let text = '';
    for (;;) {
      const value = tryConsume('char') ?? tryConsume('escaped-char');
      if (value === undefined) return text;
      text += value;
    }
  };
  const flushPendingFixed = () => {
    if (pendingFixed === '') return;
    parts.push({ type: 'fixed', value: pendingFixed, modifier: '', prefix: '', suffix: '' });
    pendingFixed = '';
  };
  const addPart = (
    prefix: string,
    name: string | undefined,
    regexpOrWildcard: { type: 'regexp' | 'asterisk'; value: string } | undefined,
    suffix: string,
    modifierText: string | undefined,
  ) => {
    const modifier = (modifierText ?? '') as Modifier;
    if (name === undefined && regexpOrWildcard === undefined && modifier === '') {
      pendingFixed += prefix;
      return;
    }
    flushPendingFixed();
    if (name === undefined && regexpOrWildcard === undefined) {
      if (prefix === '') return;
      parts.push({ type: 'fixed', value: prefix, modifier, prefix: '', suffix: '' });
      return;
    }
    let value: string;
    if (regexpOrWildcard === undefined) value = segmentWildcard;
    else if (regexpOrWildcard.type === 'asterisk') value = FULL_WILDCARD_SOURCE;
    else value = regexpOrWildcard.value;
    let type: PartType = 'regexp';
    if (value === segmentWildcard) {
      type = 'segment-wildcard';
      value = '';
    } else if (value === FULL_WILDCARD_SOURCE) {
      type = 'full-wildcard';
      value = '';
    }
    const partName = name ?? String(nextNumericName++);
    if (names.has(partName)) throw new UrlPatternSyntaxError('duplicate group name');
    names.add(partName);
    parts.push({ type, value, modifier, prefix, suffix });
  };

  while (position < tokens.length) {
    const charToken = tryConsume('char');
    const nameToken = tryConsume('name');
    let regexpOrWildcard: { type: 'regexp' | 'asterisk'; value: string } | undefined;
    const regexpValue = tryConsume('regexp');
    if (regexpValue !== undefined) regexpOrWildcard = { type: 'regexp', value: regexpValue };
    else if (nameToken === undefined && tryConsume('asterisk') !== undefined) {
      regexpOrWildcard = { type: 'asterisk', value: '*' };
    }
    if (nameToken !== undefined || regexpOrWildcard !== undefined) {
      let prefix = charToken ?? '';
      if (prefix !== options.prefix) {
        pendingFixed += prefix;
        prefix = '';
      }
      flushPendingFixed();
      addPart(prefix, nameToken, regexpOrWildcard, '', tryConsumeModifier());
      continue;
    }
    const fixed = charToken ?? tryConsume('escaped-char');
    if (fixed !== undefined) {
      pendingFixed += fixed;
      continue;
    }
    if (tryConsume('open') !== undefined) {
      const prefix = consumeText();
      const name = tryConsume('name');
      let inner: { type: 'regexp' | 'asterisk'; value: string } | undefined;
      const innerRegexp = tryConsume('regexp');
      if (innerRegexp !== undefined) inner = { type: 'regexp', value: innerRegexp };
      else if (name === undefined && tryConsume('asterisk') !== undefined) {
        inner = { type: 'asterisk', value: '*' };
      }
      const suffix = consumeText();
      mustConsume('close');
      addPart(prefix, name, inner, suffix, tryConsumeModifier());
      continue;
    }
    flushPendingFixed();
    mustConsume('end');
  }
  return parts;
}

/** RE2 forms of the two wildcards, matching what the JavaScript forms match under the `u` flag. */
const RE2_FULL_WILDCARD = '[^\\n\\r\\x{2028}\\x{2029}]*';

function re2SegmentWildcard(options: ComponentOptions): string {
  // `[^]+?` (empty delimiter) is JavaScript for "one or more of anything"; RE2 spells it so.
  return options.delimiter === '' ? '(?s:.)+?' : `[^${escapeRegexp(options.delimiter)}]+?`;
}

/** The spec's "generate a regular expression and name list", for RE2. Anchoring is testExact's. */
function partsToRegexp(parts: readonly Part[], options: ComponentOptions): string {
  let result = '';
  for (const part of parts) {
    if (part.type === 'fixed') {
      result +=
        part.modifier === '' ? escapeRegexp(part.value) : `(?:${escapeRegexp(part.value)})${part.modifier}`;
      continue;
    }
    const value =
      part.type === 'segment-wildcard'
        ? re2SegmentWildcard(options)
        : part.type === 'full-wildcard'
          ? RE2_FULL_WILDCARD
          : part.value;
    const prefix = escapeRegexp(part.prefix);
    const suffix = escapeRegexp(part.suffix);
    if (part.prefix === '' && part.suffix === '') {
      result +=
        part.modifier === '' || part.modifier === '?'
          ? `(${value})${part.modifier}`
          : `((?:${value})${part.modifier})`;
      continue;
    }
    if (part.modifier === '' || part.modifier === '?') {
      result += `(?:${prefix}(${value})${suffix})${part.modifier}`;
      continue;
    }
    result += `(?:${prefix}((?:${value})(?:${suffix}${prefix}(?:${value}))*)${suffix})`;
    if (part.modifier === '*') result += '?';
  }
  return result;
}

type ComponentName =
  | 'protocol'
  | 'username'
  | 'password'
  | 'hostname'
  | 'port'
  | 'pathname'
  | 'search'
  | 'hash';

const COMPONENTS: readonly ComponentName[] = [
  'protocol',
  'username',
  'password',
  'hostname',
  'port',
  'pathname',
  'search',
  'hash',
];

const SPECIAL_SCHEMES = ['ftp', 'file', 'http', 'https', 'ws', 'wss'];

/** A component program; undefined when the component pattern is `*` (matches every value). */
type ComponentProgram = BoundedProgram | undefined;

function compileComponent(pattern: string, options: ComponentOptions, budget: number): ComponentProgram {
  if (pattern === '*') return undefined;
  let source: string;
  try {
    source = partsToRegexp(parsePatternString(pattern, options), options);
  } catch (error) {
    if (error instanceof UrlPatternSyntaxError) throw error;
    throw new UrlPatternSyntaxError('invalid component pattern');
  }
  try {
    return compileBounded(source, budget);
  } catch (error) {
    if (error instanceof PatternTooComplexError) throw error;
    // A custom regexp group RE2 cannot run (backreference, lookaround) is refused outright.
    throw new UrlPatternSyntaxError('regexp group not supported by the linear-time engine');
  }
}

/**
 * Protocol components the polyfill may run: at most this many wildcards, names, modifiers and
 * regexp groups, and each regexp group a plain list of schemes (`https?|wss?`).
 */
const MAX_PROTOCOL_PATTERN_TOKENS = 4;
const SCHEME_LIST = /^[A-Za-z0-9+.-]+\??(?:\|[A-Za-z0-9+.-]+\??)*$/;

/**
 * Refuses a pattern whose protocol part would make the polyfill's constructor backtrack.
 *
 * Why: while parsing, the polyfill compiles the protocol part to a JavaScript RegExp and RUNS it
 * against "ftp", "file", "http", "https", "ws" and "wss" (spec: "protocol component matches a
 * special scheme"). Backtracking on a 5-character input is still exponential in the number of
 * wildcards: measured, `{*}` × 80 then `x://` blocked the loop 4.3 s, `([a-z]*` × 80 `x)://` 1.2 s,
 * before any RE2 was involved. So this scans the text the polyfill will take as the protocol (up
 * to the first `:` that is a plain, escaped or invalid character outside `{…}`, as its
 * constructor-string parser does) and bounds it first. Conservative where the lexing is in doubt:
 * an unbalanced `(` counts as a token and scanning goes on past it.
 */
function checkProtocolPart(pattern: string): void {
  // UTF-16 code units, as the polyfill's lexer reads them (a name's first character is tested
  // alone, so an astral character after `:` is no name there, and must be none here).
  const groups: string[] = [];
  let tokens = 0;
  let depth = 0;
  let index = 0;
  while (index < pattern.length) {
    const char = pattern[index] as string;
    if (char === '\\') {
      if (pattern[index + 1] === ':' && depth === 0) break;
      index += 2;
      continue;
    }
    if (char === '{') depth += 1;
    else if (char === '}') depth = Math.max(0, depth - 1);
    else if (char === '*' || char === '+' || char === '?') tokens += 1;
    else if (char === ':') {
      const next = pattern[index + 1];
      if (next !== undefined && NAME_START.test(next)) {
        tokens += 1;
        index += 2;
        while (index < pattern.length && NAME_PART.test(pattern[index] as string)) index += 1;
        continue;
      }
      if (depth === 0) break;
    } else if (char === '(') {
      tokens += 1;
      const end = regexpGroupEnd(pattern, index);
      if (end !== undefined) {
        groups.push(pattern.slice(index + 1, end - 1));
        index = end;
        continue;
      }
    }
    index += 1;
  }
  if (index >= pattern.length) return; // no protocol part: the base URL's protocol applies
  if (tokens > MAX_PROTOCOL_PATTERN_TOKENS || groups.some((group) => !SCHEME_LIST.test(group))) {
    throw new PatternTooComplexError('protocol pattern too complex');
  }
}

/**
 * Index just past the regexp group opening at `start`, by the polyfill lexer's rules; undefined
 * where that lexer reports an error (it then takes `(` as an invalid character and goes on).
 */
function regexpGroupEnd(pattern: string, start: number): number | undefined {
  if (pattern[start + 1] === '?') return undefined;
  let depth = 1;
  let position = start + 1;
  while (position < pattern.length) {
    const current = pattern[position] as string;
    if (!isAscii(current)) return undefined;
    if (current === '\\') {
      position += 2;
      continue;
    }
    if (current === ')') {
      depth -= 1;
      if (depth === 0) return position === start + 1 ? undefined : position + 1;
    } else if (current === '(') {
      depth += 1;
      if (pattern[position + 1] !== '?') return undefined;
    }
    position += 1;
  }
  return undefined;
}

/** A hostname the polyfill's canonicaliser would reject (it then reports "no match"). */
function isForbiddenHostname(hostname: string): boolean {
  if (hostname.startsWith('[')) return /[^0-9a-fA-F[\]:]/.test(hostname);
  return /[\t\n\r #%/:<>?@[\]^\\|]/.test(hostname);
}

/**
 * Compiles a URL pattern (relative patterns resolve against `baseUrl`, the hub's URL) into a
 * linear-time topic test whose components together stay within MAX_PROGRAM_SIZE instructions.
 * Throws UrlPatternSyntaxError for a pattern that does not compile, PatternTooComplexError for
 * one past the bounds.
 */
export function compileUrlPattern(pattern: string, baseUrl: string): BoundedProgram {
  checkProtocolPart(pattern);
  reportPatternWork(() => ({ stage: 'urlpattern-parse', pattern }));
  let parsed: URLPattern;
  try {
    parsed = new URLPattern(pattern, baseUrl);
  } catch {
    throw new UrlPatternSyntaxError('invalid URL pattern');
  }
  let budget = MAX_PROGRAM_SIZE;
  let memoryBytes = 0;
  const programs = new Map<ComponentName, BoundedProgram>();
  const compile = (component: ComponentName, options: ComponentOptions): ComponentProgram => {
    const program = compileComponent(parsed[component], options, budget);
    if (program) {
      budget -= program.programSize;
      memoryBytes += program.memoryBytes;
      programs.set(component, program);
    }
    return program;
  };
  const protocolProgram = compile('protocol', DEFAULT_OPTIONS);
  // Spec: the pathname uses "/" as delimiter and prefix when the protocol component can match a
  // special scheme.
  const special = SPECIAL_SCHEMES.some(
    (scheme) => protocolProgram === undefined || protocolProgram.test(scheme),
  );
  for (const component of COMPONENTS) {
    if (component === 'protocol') continue;
    const options =
      component === 'hostname'
        ? HOSTNAME_OPTIONS
        : component === 'pathname' && special
          ? PATHNAME_OPTIONS
          : DEFAULT_OPTIONS;
    compile(component, options);
  }
  const active = [...programs];

  return {
    programSize: MAX_PROGRAM_SIZE - budget,
    memoryBytes,
    test: (topic) => {
      let url: URL;
      try {
        url = new URL(topic, baseUrl);
      } catch {
        return false;
      }
      if (isForbiddenHostname(url.hostname)) return false;
      for (const [component, program] of active) {
        if (!program.test(componentValue(url, component))) return false;
      }
      return true;
    },
  };
}

function componentValue(url: URL, component: ComponentName): string {
  switch (component) {
    case 'protocol':
      return url.protocol.slice(0, -1);
    case 'search':
      return url.search.slice(1);
    case 'hash':
      return url.hash.slice(1);
    default:
      return url[component];
  }
}

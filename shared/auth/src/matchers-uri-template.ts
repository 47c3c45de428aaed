import { type BoundedProgram, compileBounded } from './matchers-re2.js';

/**
 * RFC 6570 URI templates as topic selectors, compiled to an RE2 expression (linear time).
 *
 * Why not the `uri-template-matcher` package: its matcher backtracks over every split point of
 * consecutive expressions. Measured here, `{a}x{b}x{c}x{d}y` against a 200-character topic
 * takes 450 ms and each extra expression multiplies that; a subscriber picks the template
 * (`matchURITemplate=`), so that is a denial of service. It also accepts `{id}` against
 * `a:b?c#d` and throws on a malformed percent-escape in the topic.
 *
 * The semantics are the reference hub's: it matches with `yosida95/uritemplate`'s
 * `Template.Regexp()`, i.e. each expression becomes an optional group of the characters its
 * operator may expand to (unreserved, plus reserved for `+` and `#`, plus `=` for the named
 * operators), percent-escapes allowed, variable names and prefix lengths not checked. Literals
 * must match exactly. The whole topic must match.
 */

export class UriTemplateSyntaxError extends Error {
  override readonly name = 'UriTemplateSyntaxError';
}

interface OperatorRule {
  readonly first: string;
  readonly separator: string;
  readonly named: boolean;
  readonly allowReserved: boolean;
}

// RFC 6570 Appendix A.
const OPERATORS: Readonly<Record<string, OperatorRule>> = {
  '': { first: '', separator: ',', named: false, allowReserved: false },
  '+': { first: '', separator: ',', named: false, allowReserved: true },
  '#': { first: '#', separator: ',', named: false, allowReserved: true },
  '.': { first: '.', separator: '.', named: false, allowReserved: false },
  '/': { first: '/', separator: '/', named: false, allowReserved: false },
  ';': { first: ';', separator: ';', named: true, allowReserved: false },
  '?': { first: '?', separator: '&', named: true, allowReserved: false },
  '&': { first: '&', separator: '&', named: true, allowReserved: false },
};

/** Operators RFC 6570 reserves for future extensions: a template using one is invalid. */
const RESERVED_OPERATORS = new Set(['=', ',', '!', '@', '|']);

const VARSPEC =
  /^(?:[A-Za-z0-9_]|%[0-9A-Fa-f]{2})(?:\.?(?:[A-Za-z0-9_]|%[0-9A-Fa-f]{2}))*(?::[1-9][0-9]{0,3}|\*)?$/;

const UNRESERVED = 'A-Za-z0-9\\-._~';
const RESERVED = ":/?#\\[\\]@!$&'()*+,;=";
const PCT_ENCODED = '%[0-9A-Fa-f]{2}';

/** Literal characters RFC 6570 §2.1 excludes (besides controls, handled by code point). */
const FORBIDDEN_LITERALS = new Set([' ', '"', "'", '<', '>', '\\', '^', '`', '{', '|', '}']);

function escapeRegexp(text: string): string {
  return text.replace(/[\\^$.*+?()[\]{}|]/g, '\\$&');
}

function valueClass(rule: OperatorRule, allowEquals: boolean): string {
  const characters = rule.allowReserved ? UNRESERVED + RESERVED : `${UNRESERVED},${allowEquals ? '=' : ''}`;
  return `(?:[${characters}]|${PCT_ENCODED})*`;
}

function expressionRegexp(body: string): string {
  if (body === '') throw new UriTemplateSyntaxError('empty expression');
  let operator = '';
  const firstChar = body[0] as string;
  if (Object.hasOwn(OPERATORS, firstChar) && firstChar !== '') operator = firstChar;
  else if (RESERVED_OPERATORS.has(firstChar)) throw new UriTemplateSyntaxError('reserved operator');
  const rule = OPERATORS[operator] as OperatorRule;
  const varspecs = body.slice(operator.length).split(',');
  for (const varspec of varspecs) {
    if (!VARSPEC.test(varspec)) throw new UriTemplateSyntaxError('invalid variable');
  }
  const exploded = varspecs.map((varspec) => varspec.endsWith('*'));
  const anyExploded = exploded.includes(true);
  // Without an explode modifier, at most one value per variable; with one, any number.
  const maxRepeats = anyExploded ? -1 : varspecs.length - 1;
  let values = valueClass(rule, rule.named || (exploded[0] ?? false));
  if (varspecs.length > 1 || exploded[0]) {
    values += `(?:${escapeRegexp(rule.separator)}${valueClass(rule, rule.named || maxRepeats < 0)})`;
    values += maxRepeats > 0 ? `{0,${maxRepeats}}` : '*';
  }
  // An expression whose variables are all undefined expands to nothing, hence the final `?`.
  return rule.first === '' ? `(?:${values})?` : `(?:${escapeRegexp(rule.first)}(?:${values}))?`;
}

function isForbiddenCodePoint(codePoint: number): boolean {
  return (
    codePoint <= 0x1f ||
    (codePoint >= 0x7f && codePoint <= 0x9f) ||
    (codePoint >= 0xd800 && codePoint <= 0xdfff)
  );
}

/** Translates a URI template to an RE2 source matching the topics it can expand to. */
export function uriTemplateToRegexp(template: string): string {
  let source = '';
  let index = 0;
  while (index < template.length) {
    const char = template[index] as string;
    if (char === '{') {
      const end = template.indexOf('}', index + 1);
      if (end < 0) throw new UriTemplateSyntaxError('unclosed expression');
      source += expressionRegexp(template.slice(index + 1, end));
      index = end + 1;
      continue;
    }
    if (char === '%') {
      const percentEscape = template.slice(index, index + 3);
      if (!/^%[0-9A-Fa-f]{2}$/.test(percentEscape))
        throw new UriTemplateSyntaxError('invalid percent-escape');
      source += escapeRegexp(percentEscape);
      index += 3;
      continue;
    }
    const codePoint = template.codePointAt(index) as number;
    const literal = String.fromCodePoint(codePoint);
    if (FORBIDDEN_LITERALS.has(literal) || isForbiddenCodePoint(codePoint)) {
      throw new UriTemplateSyntaxError('invalid literal character');
    }
    source += escapeRegexp(literal);
    index += literal.length;
  }
  return source;
}

/** True when the text contains at least one `{…}` expression, i.e. is a template at all. */
export function looksLikeUriTemplate(text: string): boolean {
  return text.includes('{');
}

/**
 * Compiles a URI template into a linear-time whole-topic test, within the RE2 program bounds
 * (an expression with many variables becomes a counted repetition, so the bounds apply here too).
 */
export function compileUriTemplate(template: string): BoundedProgram {
  return compileBounded(uriTemplateToRegexp(template));
}

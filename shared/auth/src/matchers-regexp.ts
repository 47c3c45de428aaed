import { type BoundedProgram, compileBounded, PatternTooComplexError } from './matchers-re2.js';

/**
 * `Regexp` topic selectors, evaluated by RE2 (re2js): linear in the topic length whatever the
 * pattern, so a subscriber cannot stall the hub with `(a+)+b` (auth.md: "never a backtracking
 * engine on untrusted patterns"). Backreferences and lookarounds do not compile and are refused.
 *
 * Decision (anchoring): the pattern must match the WHOLE topic. This is the reference hub's
 * behaviour (its Regexp matcher implements RFC 9485 I-Regexp, which "implicitly matches the
 * entire string") and the only reading under which a claim such as `https://example.com/users/42`
 * grants what it looks like it grants: unanchored, it would also grant
 * `https://evil.example/?https://example.com/users/42/x`. As in the reference, explicit `^`/`$`
 * anchors at the ends are refused rather than silently accepted, so nobody writes a pattern
 * believing it anchors something the engine already anchors differently.
 */

export class RegexpSyntaxError extends Error {
  override readonly name = 'RegexpSyntaxError';
}

/** True when `pattern` ends with a `$` that is not escaped by an odd run of backslashes. */
function endsWithUnescapedDollar(pattern: string): boolean {
  if (!pattern.endsWith('$')) return false;
  let backslashes = 0;
  for (let index = pattern.length - 2; index >= 0 && pattern[index] === '\\'; index--) backslashes++;
  return backslashes % 2 === 0;
}

/** Compiles a Regexp selector; throws RegexpSyntaxError, or PatternTooComplexError past the bounds. */
export function compileRegexp(pattern: string): BoundedProgram {
  if (pattern.startsWith('^') || endsWithUnescapedDollar(pattern)) {
    throw new RegexpSyntaxError('anchors are implicit: the pattern always matches the whole topic');
  }
  try {
    return compileBounded(pattern);
  } catch (error) {
    if (error instanceof PatternTooComplexError) throw error;
    throw new RegexpSyntaxError('the pattern does not compile');
  }
}

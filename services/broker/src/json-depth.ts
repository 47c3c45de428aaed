/**
 * Nesting depth of a JSON text, measured without parsing it. The body parser calls this
 * before `JSON.parse`: a `[[[[…]]]]` body parses, but every later recursive walk of it
 * (`JSON.stringify` of a payload, the logger, a client) overflows the stack, so depth is
 * refused at the edge (docs/broker-api.md "Limits"). One pass, constant memory, no recursion;
 * brackets inside strings (escapes included) do not count.
 *
 * Returns the first offset where the depth exceeds `max`, or -1 when it never does.
 * Malformed JSON is left for `JSON.parse` to report.
 */
const QUOTE = 0x22;
const BACKSLASH = 0x5c;
const OPEN_ARRAY = 0x5b;
const OPEN_OBJECT = 0x7b;
const CLOSE_ARRAY = 0x5d;
const CLOSE_OBJECT = 0x7d;

export function depthExceededAt(text: string, max: number): number {
  let depth = 0;
  let inString = false;
  for (let index = 0; index < text.length; index++) {
    const code = text.charCodeAt(index);
    if (inString) {
      if (code === BACKSLASH) index++;
      else if (code === QUOTE) inString = false;
    } else if (code === QUOTE) {
      inString = true;
    } else if (code === OPEN_ARRAY || code === OPEN_OBJECT) {
      if (++depth > max) return index;
    } else if ((code === CLOSE_ARRAY || code === CLOSE_OBJECT) && depth > 0) {
      // Clamped: stray closers (malformed anyway) must not bank depth for later openers.
      depth--;
    }
  }
  return -1;
}

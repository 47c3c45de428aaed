/**
 * Nesting depth of a JSON text, measured without parsing it. The body parser calls this
 * before `JSON.parse`: a `[[[[…]]]]` body parses, but every later recursive walk of it
 * (`JSON.stringify` of a payload, the logger, a client) overflows the stack, so depth is
 * refused at the edge (docs/broker.md "Limits"). One pass, constant memory, no recursion;
 * brackets inside strings (escapes included) do not count.
 *
 * Returns the first offset where the depth exceeds `max`, or -1 when it never does.
 * Malformed JSON is left for `JSON.parse` to report.
 */
export function depthExceededAt(text: string, max: number): number {
  let depth = 0;
  let inString = false;
  for (let index = 0; index < text.length; index++) {
    const code = text.charCodeAt(index);
    if (inString) {
      if (code === 0x5c /* \ */) index++;
      else if (code === 0x22 /* " */) inString = false;
    } else if (code === 0x22) {
      inString = true;
    } else if (code === 0x5b /* [ */ || code === 0x7b /* { */) {
      if (++depth > max) return index;
    } else if ((code === 0x5d /* ] */ || code === 0x7d) /* } */ && depth > 0) {
      // Clamped: stray closers (malformed anyway) must not bank depth for later openers.
      depth--;
    }
  }
  return -1;
}

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
  const length = text.length;
  for (let index = 0; index < length; index++) {
    const code = text.charCodeAt(index);
    if (code === QUOTE) {
      // Jump to the closing quote (`indexOf`, not a loop over every character: strings are most
      // of a body's text): the first one not escaped by an odd run of backslashes. The run stops
      // at the opening quote at the latest, and each run is counted once: linear in the text.
      for (;;) {
        const close = text.indexOf('"', index + 1);
        // An unterminated string: nothing after it counts (malformed, JSON.parse reports it).
        if (close < 0) return -1;
        let backslashes = 0;
        while (text.charCodeAt(close - 1 - backslashes) === BACKSLASH) backslashes++;
        index = close;
        if (backslashes % 2 === 0) break;
      }
    } else if (code === OPEN_ARRAY || code === OPEN_OBJECT) {
      if (++depth > max) return index;
    } else if ((code === CLOSE_ARRAY || code === CLOSE_OBJECT) && depth > 0) {
      // Clamped: stray closers (malformed anyway) must not bank depth for later openers.
      depth--;
    }
  }
  return -1;
}

/** The query string of a raw request URL, decoded form-style, parameter order and repeats kept. */
export function queryParameters(rawUrl: string): URLSearchParams {
  const question = rawUrl.indexOf('?');
  return new URLSearchParams(question === -1 ? '' : rawUrl.slice(question + 1));
}

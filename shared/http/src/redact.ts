/**
 * Query parameter names whose value may be a credential. Mercure lets tokens ride in the query
 * as `authorization` (docs/auth.md), RFC 6750 §2.3 as `access_token`; anything that merely looks
 * like a token name is hidden too, since over-redacting a log line costs nothing.
 */
const CREDENTIAL_NAME = /authori[sz]ation|token|jwt|secret|password/i;

/**
 * The name of a query parameter as the services read it: form decoding (`+` is a space, then
 * percent escapes), like URLSearchParams. Undefined when the name does not decode cleanly
 * (a malformed escape): a reader that is more lenient than we are could still see a token name
 * in it, so such a parameter is treated as a credential.
 */
function decodedName(rawName: string): string | undefined {
  try {
    return decodeURIComponent(rawName.replace(/\+/g, ' '));
  } catch {
    return undefined;
  }
}

function isCredentialName(rawName: string): boolean {
  const name = decodedName(rawName);
  return name === undefined || CREDENTIAL_NAME.test(name);
}

/**
 * The URL with the value of every token-carrying query parameter replaced, for access logs
 * (issue #8: `?%61uthorization=<jwt>` was accepted as a token by the hub, which decodes
 * parameter names, yet logged in full by a literal-name match).
 *
 * Names are compared DECODED and case-insensitively. Everything after the first `?` is the query,
 * split on `&` as URLSearchParams does (the hub's parser) and also on `;`, so a value never
 * survives because of a separator one parser honours and another does not; a `#` does not end
 * the query here, since the hub's parser does not stop at it either.
 */
export function redactUrl(url: string): string {
  const question = url.indexOf('?');
  if (question === -1) return url;
  const query = url.slice(question + 1);
  const redacted = query.replace(/[^&;]+/g, (pair) => {
    const equals = pair.indexOf('=');
    const rawName = equals === -1 ? pair : pair.slice(0, equals);
    if (equals === -1 || !isCredentialName(rawName)) return pair;
    return `${rawName}=[REDACTED]`;
  });
  return `${url.slice(0, question + 1)}${redacted}`;
}

/** A run of URL-ish text holding a query: no whitespace, no quote (log lines are JSON). */
const URL_WITH_QUERY = /[^\s"'<>`]*\?[^\s"'<>`]*/g;

/**
 * Free text (a whole log line) with every embedded URL's credentials redacted: fastify writes
 * raw request URLs into messages of its own ("Route GET:/x?authorization=… not found",
 * FST_ERR_REP_ALREADY_SENT), which no serializer sees.
 */
export function redactText(text: string): string {
  return text.includes('?') ? text.replace(URL_WITH_QUERY, (run) => redactUrl(run)) : text;
}

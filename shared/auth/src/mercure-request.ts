import { isIP } from 'node:net';
import { AuthError } from './errors.js';

/**
 * Where a Mercure token comes from, and whether the request was secure enough to carry one.
 *
 * Precedence (seed): the `Authorization: Bearer` header, then the `authorization` query
 * parameter, then the cookie. Only the winner is read; the losers are not parsed at all, so an
 * invalid cookie next to a valid header cannot fail the request.
 */
export type TokenSource = 'header' | 'query' | 'cookie';

export const DEFAULT_COOKIE_NAME = 'mercureAuthorization';
/** The Mercure spec's query parameter (docs/auth.md, "Hub profile"). */
export const QUERY_PARAMETER = 'authorization';
/**
 * RFC 6750 §2.3's name, used by the current Mercure draft. Read after `authorization` (same
 * precedence tier) so clients of the current reference hub work unchanged.
 */
export const RFC6750_QUERY_PARAMETER = 'access_token';

type QueryValue = string | readonly string[] | undefined;

export interface TokenCarrier {
  /** Node's lower-cased request headers. */
  readonly headers: Readonly<Record<string, string | readonly string[] | undefined>>;
  /** Parsed query (fastify's `request.query`) or the raw search parameters. */
  readonly query?: Readonly<Record<string, unknown>> | URLSearchParams | undefined;
  /** Parsed cookies (`@fastify/cookie`); when absent the Cookie header is read directly. */
  readonly cookies?: Readonly<Record<string, string | undefined>> | undefined;
}

export interface ExtractedToken {
  readonly token: string;
  readonly source: TokenSource;
}

function queryValue(carrier: TokenCarrier, name: string): QueryValue {
  const { query } = carrier;
  if (!query) return undefined;
  if (query instanceof URLSearchParams) {
    const all = query.getAll(name);
    return all.length === 0 ? undefined : all.length === 1 ? all[0] : all;
  }
  const value = query[name];
  if (typeof value === 'string') return value;
  if (Array.isArray(value) && value.every((item) => typeof item === 'string')) return value;
  return value === undefined ? undefined : [];
}

function headerValue(carrier: TokenCarrier): string | readonly string[] | undefined {
  return carrier.headers.authorization;
}

/** One cookie's value from a Cookie header, without parsing the others' values. */
function cookieFromHeader(header: string | readonly string[] | undefined, name: string): string | undefined {
  if (header === undefined) return undefined;
  const text = typeof header === 'string' ? header : header.join('; ');
  for (const pair of text.split(';')) {
    const separator = pair.indexOf('=');
    if (separator < 0 || pair.slice(0, separator).trim() !== name) continue;
    let value = pair.slice(separator + 1).trim();
    if (value.length >= 2 && value.startsWith('"') && value.endsWith('"')) value = value.slice(1, -1);
    try {
      return decodeURIComponent(value);
    } catch {
      return value;
    }
  }
  return undefined;
}

function cookieValue(carrier: TokenCarrier, cookieName: string): string | undefined {
  const value = carrier.cookies
    ? carrier.cookies[cookieName]
    : cookieFromHeader(carrier.headers.cookie, cookieName);
  // An empty cookie is how applications "clear" it; it is no credential.
  return value === undefined || value === '' ? undefined : value;
}

function queryCredential(carrier: TokenCarrier): QueryValue {
  return queryValue(carrier, QUERY_PARAMETER) ?? queryValue(carrier, RFC6750_QUERY_PARAMETER);
}

/**
 * Which source would supply the token, without reading it: used to apply the HTTPS rule before
 * anything about the token is evaluated.
 */
export function tokenSourceOf(
  carrier: TokenCarrier,
  cookieName = DEFAULT_COOKIE_NAME,
): TokenSource | undefined {
  if (headerValue(carrier) !== undefined) return 'header';
  if (queryCredential(carrier) !== undefined) return 'query';
  if (cookieValue(carrier, cookieName) !== undefined) return 'cookie';
  return undefined;
}

const BEARER = /^Bearer +([^\s]+) *$/i;

/**
 * The winning token and its source, or undefined when the request carries none (anonymous).
 * Throws AuthError `malformed_token` with status 400 when the winning source is present but
 * unusable: an Authorization header that is not `Bearer <token>`, or a repeated or empty query
 * parameter. That is a malformed request rather than a bad token (RFC 6750 §3.1
 * `invalid_request`; Mercure draft, error responses). The token itself is not validated here.
 */
export function extractMercureToken(
  carrier: TokenCarrier,
  cookieName = DEFAULT_COOKIE_NAME,
): ExtractedToken | undefined {
  const header = headerValue(carrier);
  if (header !== undefined) {
    const match = typeof header === 'string' ? BEARER.exec(header) : null;
    if (!match?.[1]) {
      throw new AuthError('malformed_token', 'The Authorization header must be "Bearer <token>"', 400);
    }
    return { token: match[1], source: 'header' };
  }
  const query = queryCredential(carrier);
  if (query !== undefined) {
    if (typeof query !== 'string' || query === '') {
      throw new AuthError(
        'malformed_token',
        'The authorization query parameter must appear once, with a token',
        400,
      );
    }
    return { token: query, source: 'query' };
  }
  const cookie = cookieValue(carrier, cookieName);
  return cookie === undefined ? undefined : { token: cookie, source: 'cookie' };
}

/**
 * The facts that decide whether a request may carry a token (auth.md, HTTPS rule). The hub
 * builds them from its listener and proxy configuration, or with `transportFactsOf`.
 */
export interface TransportFacts {
  /** TLS was terminated on the hub's own listener. */
  readonly encrypted: boolean;
  /** The scheme a trusted proxy reported in X-Forwarded-Proto (last hop), if any. */
  readonly forwardedProto?: string | undefined;
  /** The peer is in the configured trusted-proxy list, so `forwardedProto` is believed. */
  readonly fromTrustedProxy: boolean;
  /** The TCP peer is a loopback address. */
  readonly remoteIsLoopback: boolean;
  /** Development mode (`MERCURE_DEV`): a loopback peer counts as secure, as browsers treat localhost. */
  readonly devMode: boolean;
}

/**
 * Seed: "The hub never accepts tokens over plain HTTP." Secure means TLS on our listener, or a
 * trusted proxy that says it received HTTPS; in development mode, also a loopback peer.
 */
export function isSecureTransport(facts: TransportFacts): boolean {
  if (facts.encrypted) return true;
  if (facts.fromTrustedProxy && facts.forwardedProto?.trim().toLowerCase() === 'https') return true;
  return facts.devMode && facts.remoteIsLoopback;
}

export function isLoopbackAddress(address: string | undefined): boolean {
  if (!address) return false;
  const unmapped = address.startsWith('::ffff:') ? address.slice(7) : address;
  if (isIP(unmapped) === 4) return unmapped.startsWith('127.');
  return unmapped === '::1';
}

/** The parts of a fastify request `transportFactsOf` reads. */
export interface TransportRequest {
  readonly protocol: string;
  readonly headers: Readonly<Record<string, string | readonly string[] | undefined>>;
  readonly socket: { readonly remoteAddress?: string | undefined } & { readonly encrypted?: boolean };
}

/**
 * Transport facts from a fastify request. Fastify only honours X-Forwarded-Proto when the TCP
 * peer is in its `trustProxy` list, so a `request.protocol` equal to the header's last entry on
 * an unencrypted socket means a trusted proxy vouched for it.
 */
export function transportFactsOf(request: TransportRequest, options: { devMode: boolean }): TransportFacts {
  const encrypted = request.socket.encrypted === true;
  const forwarded = request.headers['x-forwarded-proto'];
  const forwardedText = typeof forwarded === 'string' ? forwarded : forwarded?.join(',');
  const lastHop = forwardedText?.split(',').at(-1)?.trim();
  const fromTrustedProxy = !encrypted && lastHop !== undefined && request.protocol === lastHop;
  return {
    encrypted,
    forwardedProto: fromTrustedProxy ? lastHop : undefined,
    fromTrustedProxy,
    remoteIsLoopback: isLoopbackAddress(request.socket.remoteAddress),
    devMode: options.devMode,
  };
}

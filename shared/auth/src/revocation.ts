/**
 * Token revocation (issue #24 item 3; docs/security.md, "Revocation"): the entries of a deny
 * list and the in-memory index every node checks each request against. Storage and
 * propagation are `@herald/redis`'s (revocations.ts); the admin routes are each service's.
 *
 * Two kinds of entry:
 * - `jti`: the token with this `jti` claim;
 * - `sub`: every token of this `sub` issued before `before` (ms since the epoch). A token of
 *   that sub WITHOUT `iat` is covered too: it cannot prove it was issued after the cut-off, and
 *   a deny list an attacker escapes by minting tokens without `iat` would be no deny list.
 *
 * `expiresAt` (ms since the epoch) is when the tokens an entry covers would have expired anyway:
 * past it the entry is ignored, and storage drops it. Absent, the entry stays until deleted
 * (a token without `exp` never expires).
 */

/** Longest `jti` or `sub` an entry may name (a bound on what an admin request can store). */
export const MAX_REVOCATION_ID_LENGTH = 256;

export type RevocationEntry =
  | { readonly kind: 'jti'; readonly jti: string; readonly expiresAt?: number | undefined }
  | {
      readonly kind: 'sub';
      readonly sub: string;
      readonly before: number;
      readonly expiresAt?: number | undefined;
    };

/** What of a verified token the deny list reads. `iat` is in seconds, as in the JWT. */
export interface RevocableToken {
  readonly jti?: string | undefined;
  readonly sub?: string | undefined;
  readonly iat?: number | undefined;
}

/** What an authenticator asks on every request, after verification (never cached). */
export interface RevocationCheck {
  isRevoked(token: RevocableToken): boolean;
}

/** An entry that is not well-formed: the message says which field and why (a 400 at the edge). */
export class InvalidRevocationError extends Error {
  override readonly name = 'InvalidRevocationError';
}

/**
 * The stable id of an entry: `jti:<jti>` or `sub:<sub>`. One entry per id, so adding the same
 * revocation twice leaves one entry (a resend, a retried admin call), and a new `sub` entry
 * replaces the previous one for that sub.
 */
export function revocationId(entry: RevocationEntry): string {
  return entry.kind === 'jti' ? `jti:${entry.jti}` : `sub:${entry.sub}`;
}

/** Whether the entry no longer covers any token at `now` (ms). */
export function isExpiredRevocation(entry: RevocationEntry, now: number): boolean {
  return entry.expiresAt !== undefined && entry.expiresAt <= now;
}

function boundedId(value: unknown, field: string): string {
  if (typeof value !== 'string' || value === '')
    throw new InvalidRevocationError(`${field} must be a non-empty string`);
  if (value.length > MAX_REVOCATION_ID_LENGTH) {
    throw new InvalidRevocationError(`${field} exceeds ${MAX_REVOCATION_ID_LENGTH} characters`);
  }
  return value;
}

/** Whole ms from 0 to 8.64e15 (the Date range), the bound the broker uses for times. */
function time(value: unknown, field: string): number {
  if (typeof value !== 'number' || !Number.isSafeInteger(value) || value < 0 || value > 8.64e15) {
    throw new InvalidRevocationError(`${field} must be a time in whole milliseconds since the epoch`);
  }
  return value;
}

/**
 * Checks an entry read from a request or from storage; throws InvalidRevocationError naming the
 * field. Returns a copy holding only the entry's own fields.
 */
export function parseRevocationEntry(value: unknown): RevocationEntry {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) {
    throw new InvalidRevocationError('a revocation entry must be a JSON object');
  }
  const fields = value as Record<string, unknown>;
  const expiresAt = fields.expiresAt === undefined ? undefined : time(fields.expiresAt, 'expiresAt');
  const optional = expiresAt === undefined ? {} : { expiresAt };
  if (fields.kind === 'jti') return { kind: 'jti', jti: boundedId(fields.jti, 'jti'), ...optional };
  if (fields.kind === 'sub') {
    return {
      kind: 'sub',
      sub: boundedId(fields.sub, 'sub'),
      before: time(fields.before, 'before'),
      ...optional,
    };
  }
  throw new InvalidRevocationError('kind must be "jti" or "sub"');
}

/**
 * The node's copy of the deny list. `isRevoked` is two map lookups whatever the list's size: it
 * runs on every authenticated request. Expiry is read from `now` (the node's clock), so an entry
 * stops applying at its `expiresAt` even before storage drops it.
 */
export class DenyList implements RevocationCheck {
  private byJti = new Map<string, RevocationEntry & { kind: 'jti' }>();
  private bySub = new Map<string, RevocationEntry & { kind: 'sub' }>();

  constructor(private readonly now: () => number = Date.now) {}

  get size(): number {
    return this.byJti.size + this.bySub.size;
  }

  isRevoked(token: RevocableToken): boolean {
    const now = this.now();
    if (token.jti !== undefined) {
      const entry = this.byJti.get(token.jti);
      if (entry && !isExpiredRevocation(entry, now)) return true;
    }
    if (token.sub !== undefined) {
      const entry = this.bySub.get(token.sub);
      if (entry && !isExpiredRevocation(entry, now)) {
        // No iat: covered (see the header). iat is in seconds, `before` in ms.
        if (token.iat === undefined || token.iat * 1000 < entry.before) return true;
      }
    }
    return false;
  }

  /**
   * Makes `entries` the whole list. Returns the entries that were not in it before or changed
   * (a sub entry whose `before` moved): those whose tokens open streams must now be checked.
   */
  replace(entries: readonly RevocationEntry[]): RevocationEntry[] {
    const byJti = new Map<string, RevocationEntry & { kind: 'jti' }>();
    const bySub = new Map<string, RevocationEntry & { kind: 'sub' }>();
    const added: RevocationEntry[] = [];
    for (const entry of entries) {
      if (entry.kind === 'jti') {
        if (!this.byJti.has(entry.jti)) added.push(entry);
        byJti.set(entry.jti, entry);
      } else {
        const previous = this.bySub.get(entry.sub);
        if (previous?.before !== entry.before) added.push(entry);
        bySub.set(entry.sub, entry);
      }
    }
    this.byJti = byJti;
    this.bySub = bySub;
    return added;
  }

  /** The entries held, expired ones included (storage prunes them). */
  entries(): RevocationEntry[] {
    return [...this.byJti.values(), ...this.bySub.values()];
  }
}

const REQUEST_FIELDS = new Set(['kind', 'jti', 'sub', 'before', 'token', 'expiresAt']);

/**
 * The entry an admin request asks for (docs/contracts.md, "Revocation routes"), the one grammar
 * of both services' POST: `{ jti, expiresAt? }`, `{ sub, before?, expiresAt? }` (`before`
 * defaults to `now`), or `{ token }`, a raw JWT decoded WITHOUT verification (it is the token
 * to refuse, not a credential) for its `jti` and `exp`. Times are ms since the epoch; `kind`
 * may be given (an entry read from GET posts back as is) and must then fit. Throws
 * InvalidRevocationError naming the field.
 */
export function revocationFromRequest(
  body: unknown,
  now: number,
  maxTokenLength = 64 * 1024,
): RevocationEntry {
  if (typeof body !== 'object' || body === null || Array.isArray(body)) {
    throw new InvalidRevocationError(
      'the body must be a JSON object: { jti }, { sub, before? } or { token }',
    );
  }
  const fields = body as Record<string, unknown>;
  for (const field of Object.keys(fields)) {
    if (!REQUEST_FIELDS.has(field)) throw new InvalidRevocationError(`unknown field "${field.slice(0, 64)}"`);
  }
  const given = ['jti', 'sub', 'token'].filter((field) => fields[field] !== undefined);
  if (given.length !== 1) throw new InvalidRevocationError('give exactly one of jti, sub or token');
  const optional = fields.expiresAt === undefined ? {} : { expiresAt: fields.expiresAt };
  let entry: unknown;
  if (fields.token !== undefined) {
    if (fields.before !== undefined) throw new InvalidRevocationError('before applies to sub only');
    const claims = unverifiedClaims(fields.token, maxTokenLength);
    if (typeof claims.jti !== 'string' || claims.jti === '') {
      throw new InvalidRevocationError('the token has no jti claim: revoke it by sub instead');
    }
    const expiresAt = typeof claims.exp === 'number' ? Math.ceil(claims.exp) * 1000 : undefined;
    entry = { kind: 'jti', jti: claims.jti, ...(expiresAt === undefined ? {} : { expiresAt }), ...optional };
  } else if (fields.jti !== undefined) {
    if (fields.before !== undefined) throw new InvalidRevocationError('before applies to sub only');
    entry = { kind: 'jti', jti: fields.jti, ...optional };
  } else {
    entry = { kind: 'sub', sub: fields.sub, before: fields.before ?? now, ...optional };
  }
  const parsed = parseRevocationEntry(entry);
  if (fields.kind !== undefined && fields.kind !== parsed.kind) {
    throw new InvalidRevocationError(
      `kind "${String(fields.kind).slice(0, 16)}" does not fit the fields given`,
    );
  }
  return parsed;
}

/** The payload of a compact JWT, signature unchecked; InvalidRevocationError when it is not one. */
function unverifiedClaims(token: unknown, maxLength: number): Record<string, unknown> {
  if (typeof token !== 'string' || token === '')
    throw new InvalidRevocationError('token must be a non-empty string');
  if (token.length > maxLength) throw new InvalidRevocationError(`token exceeds ${maxLength} characters`);
  const parts = token.split('.');
  let payload: unknown;
  try {
    payload =
      parts.length === 3 ? JSON.parse(Buffer.from(parts[1] ?? '', 'base64url').toString('utf8')) : undefined;
  } catch {
    payload = undefined;
  }
  if (typeof payload !== 'object' || payload === null || Array.isArray(payload)) {
    throw new InvalidRevocationError('token is not a compact JWT with a JSON payload');
  }
  return payload as Record<string, unknown>;
}

/** `jti`, `sub` and `iat` of a verified payload, each only when it has the JWT's type. */
export function revocableTokenOf(payload: Readonly<Record<string, unknown>>): RevocableToken {
  const { jti, sub, iat } = payload;
  return {
    jti: typeof jti === 'string' ? jti : undefined,
    sub: typeof sub === 'string' ? sub : undefined,
    iat: typeof iat === 'number' && Number.isFinite(iat) ? iat : undefined,
  };
}

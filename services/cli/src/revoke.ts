/*
 * `herald token revoke` (issue #24 item 3; docs/security.md, "Revocation"): puts a token's jti,
 * or every token of a sub issued before a time, on the deny list of a hub and/or a broker
 * through their admin routes, and prints what each answered.
 */
import type { Output } from './cli.js';

export class RevokeOptionsError extends Error {}

export interface RevokeOptions {
  readonly hub?: string[];
  readonly broker?: string[];
  readonly 'admin-token'?: string;
  readonly jti?: string;
  readonly sub?: string;
  readonly before?: string;
  readonly token?: string;
  readonly expires?: string;
}

export const REVOKE_USAGE = `Usage: herald token revoke (--hub <url> | --broker <url>)... --admin-token <jwt>
                          (--jti <id> | --sub <id> [--before <time>] | --token <jwt>) [--expires <time>]

Puts a token on the deny list of a hub and/or a broker (their admin routes): every node of the
service refuses it within 2 s, and the hub closes the streams opened with it. Prints each
service's answer; exits non-zero if any refused or could not be reached. Details:
docs/security.md, "Revocation".

Options:
  --hub <url>          a hub's base URL (https://hub.example.com); repeatable
  --broker <url>       a broker's base URL (http://broker:6632); repeatable
  --admin-token <jwt>  the admin token (default: the HERALD_ADMIN_TOKEN environment variable):
                       for a hub, signed with its publisher key and carrying
                       "herald": {"admin": true} (herald token --hub-admin); for a broker, the
                       admin role
  --jti <id>           revoke the token with this jti
  --sub <id>           revoke every token of this sub issued before --before (default: now);
                       tokens of that sub without iat are revoked too
  --before <time>      with --sub: ISO 8601 (2026-12-02T09:00:00Z) or epoch seconds
  --token <jwt>        revoke this token (its jti; the entry expires with its exp)
  --expires <time>     when the entry may go (ISO 8601 or epoch seconds): when the tokens it
                       covers expire anyway; without it (and without --token's exp) it stays
                       until deleted
  -h, --help           print this help

Example:
  herald token revoke --hub https://hub.example.com --admin-token "$ADMIN" --jti 8f2c…
`;

/** ISO 8601, or whole epoch seconds, to ms since the epoch. */
export function parseTime(text: string, flag: string): number {
  const ms = /^\d+$/.test(text) ? Number(text) * 1000 : Date.parse(text);
  if (!Number.isSafeInteger(ms) || ms < 0 || ms > 8.64e15) {
    throw new RevokeOptionsError(
      `${flag} takes an ISO 8601 time or epoch seconds (got ${JSON.stringify(text)})`,
    );
  }
  return ms;
}

/** The POST body both services read (docs/contracts.md, "Revocation routes"). */
export function revocationBody(options: RevokeOptions): Record<string, unknown> {
  const given = (['jti', 'sub', 'token'] as const).filter((flag) => options[flag] !== undefined);
  if (given.length !== 1) throw new RevokeOptionsError('give exactly one of --jti, --sub or --token');
  if (options.before !== undefined && options.sub === undefined) {
    throw new RevokeOptionsError('--before applies to --sub only');
  }
  const expires = options.expires === undefined ? {} : { expiresAt: parseTime(options.expires, '--expires') };
  if (options.jti !== undefined) return { jti: options.jti, ...expires };
  if (options.token !== undefined) return { token: options.token, ...expires };
  const before = options.before === undefined ? {} : { before: parseTime(options.before, '--before') };
  return { sub: options.sub, ...before, ...expires };
}

interface Target {
  readonly service: 'hub' | 'broker';
  readonly url: string;
}

/** Where each service's admin route is, from the base URL given (a hub URL may name its /.well-known/mercure). */
function targets(options: RevokeOptions): Target[] {
  const parsed = (flag: string, text: string): URL => {
    if (!URL.canParse(text))
      throw new RevokeOptionsError(`${flag} must be a URL (got ${JSON.stringify(text)})`);
    return new URL(text);
  };
  const list: Target[] = [];
  for (const text of options.hub ?? []) {
    const base = parsed('--hub', text);
    const path = base.pathname.replace(/\/\.well-known\/mercure\/?$/, '').replace(/\/+$/, '');
    list.push({ service: 'hub', url: `${base.origin}${path}/herald/admin/revocations` });
  }
  for (const text of options.broker ?? []) {
    const base = parsed('--broker', text);
    list.push({
      service: 'broker',
      url: `${base.origin}${base.pathname.replace(/\/+$/, '')}/api/v1/system/revocations`,
    });
  }
  if (list.length === 0) throw new RevokeOptionsError('give at least one --hub <url> or --broker <url>');
  return list;
}

/** Sends the revocation to every target; 0 when each answered 2xx. Throws RevokeOptionsError for bad options. */
export async function revoke(
  options: RevokeOptions,
  environment: Readonly<Record<string, string | undefined>>,
  output: Output,
): Promise<number> {
  const adminToken = options['admin-token'] ?? environment.HERALD_ADMIN_TOKEN;
  if (adminToken === undefined || adminToken === '') {
    throw new RevokeOptionsError('give --admin-token <jwt> or set HERALD_ADMIN_TOKEN');
  }
  const body = JSON.stringify(revocationBody(options));
  const list = targets(options);
  let failures = 0;
  for (const { service, url } of list) {
    try {
      const response = await fetch(url, {
        method: 'POST',
        headers: { authorization: `Bearer ${adminToken}`, 'content-type': 'application/json' },
        body,
      });
      const text = (await response.text()).trim();
      const line = `${service} ${url}: ${response.status} ${text}\n`;
      if (response.ok) output.stdout(line);
      else {
        failures += 1;
        output.stderr(line);
      }
    } catch (error) {
      failures += 1;
      const reason =
        error instanceof Error ? (error.cause instanceof Error ? error.cause.message : error.message) : '';
      output.stderr(`${service} ${url}: not reached (${reason})\n`);
    }
  }
  return failures === 0 ? 0 : 1;
}

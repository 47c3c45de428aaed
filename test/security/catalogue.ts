import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { ServiceNode } from './nodes.js';
import { type RawRequest, type RawResponse, rawRequest } from './raw-http.js';

/**
 * One attack: a real HTTP request (written verbatim to a socket), the status the service must
 * answer, and where it matters a check of state or logs afterwards.
 */
export interface AttackRow {
  /** The attack class: an issue #8 defect, an "also decide" item, or a token attack that holds. */
  readonly attack: string;
  readonly name: string;
  /** Built when the row runs, so rows can use state made by `setup`. */
  readonly request: RawRequest | (() => RawRequest | Promise<RawRequest>);
  readonly status: number | readonly number[];
  /** Runs before the request (create a queue, open a subscriber…). */
  readonly setup?: () => Promise<void>;
  readonly check?: (response: RawResponse) => void | Promise<void>;
  /** How long the answer may take (default 15 s); only where the issue asks for responsiveness. */
  readonly timeoutMs?: number;
  /** Which node answers (default: the catalogue's main node). */
  readonly node?: () => ServiceNode;
}

/** Registers one node:test test per row and prints the row count. */
export function registerCatalogue(
  service: string,
  rows: readonly AttackRow[],
  main: () => ServiceNode,
  /** Restarts the main node when a row crashed it, so one crash does not fail every later row. */
  revive: () => Promise<void>,
): void {
  test(`${service} attack catalogue: ${rows.length} rows`, () => {
    console.log(`${service} attack catalogue: ${rows.length} rows`);
    assert.ok(rows.length > 0);
  });
  for (const row of rows) {
    test(`${service} · ${row.attack} · ${row.name}`, async () => {
      if (!main().alive()) await revive();
      await row.setup?.();
      const node = row.node?.() ?? main();
      const request = typeof row.request === 'function' ? await row.request() : row.request;
      const response = await rawRequest(node.port, request, row.timeoutMs);
      const allowed = typeof row.status === 'number' ? [row.status] : row.status;
      assert.ok(
        allowed.includes(response.status),
        `expected ${allowed.join(' or ')}, got ${response.status} ${response.body.slice(0, 300)}`,
      );
      await row.check?.(response);
      assert.ok(node.alive(), `${node.service} still runs`);
    });
  }
}

/** `WWW-Authenticate: Bearer …error="<code>"` (RFC 6750 §3). */
export function assertBearerChallenge(
  response: RawResponse,
  error: 'invalid_token' | 'insufficient_scope',
): void {
  const challenge = response.headers['www-authenticate'] ?? '';
  assert.match(challenge, /^Bearer\b/i, `WWW-Authenticate: ${challenge}`);
  assert.match(challenge, new RegExp(`error="${error}"`), `WWW-Authenticate: ${challenge}`);
}

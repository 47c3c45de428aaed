/**
 * Shared test fixtures: keys, token minting, a recording logger, a fake clock and a real local
 * HTTP server for JWKS. Not a test file itself (the runner only picks up `*.test.ts`).
 */
import assert from 'node:assert/strict';
import { generateKeyPairSync, type KeyObject } from 'node:crypto';
import { once } from 'node:events';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { SignJWT } from 'jose';
import { AuthError, type AuthFailureReason } from '../src/errors.js';
import type { AuthLogger } from '../src/logger.js';

export interface KeyPair {
  readonly privateKey: KeyObject;
  readonly publicKey: KeyObject;
  readonly publicPem: string;
}

function pair(generated: { privateKey: KeyObject; publicKey: KeyObject }): KeyPair {
  return {
    ...generated,
    publicPem: generated.publicKey.export({ type: 'spki', format: 'pem' }).toString(),
  };
}

let cachedKeys: Record<string, KeyPair> | undefined;

/** Generated once per test process (RSA generation is slow). */
export function keys(): {
  rsa: KeyPair;
  rsa2: KeyPair;
  ecP256: KeyPair;
  ecP384: KeyPair;
  ed25519: KeyPair;
  ed25519b: KeyPair;
} {
  cachedKeys ??= {
    rsa: pair(generateKeyPairSync('rsa', { modulusLength: 2048 })),
    rsa2: pair(generateKeyPairSync('rsa', { modulusLength: 2048 })),
    ecP256: pair(generateKeyPairSync('ec', { namedCurve: 'P-256' })),
    ecP384: pair(generateKeyPairSync('ec', { namedCurve: 'P-384' })),
    ed25519: pair(generateKeyPairSync('ed25519')),
    ed25519b: pair(generateKeyPairSync('ed25519')),
  };
  return cachedKeys as ReturnType<typeof keys>;
}

export const SECRET = 'a-test-secret-that-is-at-least-32-bytes-long!';

/** Fixed "now" for tests: 2023-11-14T22:13:20Z, in ms. */
export const NOW_MS = 1_700_000_000_000;
export const NOW_S = NOW_MS / 1000;

export interface SignOptions {
  readonly alg: string;
  readonly key: KeyObject | Uint8Array | string;
  readonly kid?: string;
  readonly typ?: string;
  /** Defaults to NOW_S + 3600; `null` leaves exp out. */
  readonly exp?: number | null;
}

export async function sign(claims: Record<string, unknown>, options: SignOptions): Promise<string> {
  const key = typeof options.key === 'string' ? new TextEncoder().encode(options.key) : options.key;
  const header: { alg: string; kid?: string; typ?: string } = { alg: options.alg };
  if (options.kid !== undefined) header.kid = options.kid;
  if (options.typ !== undefined) header.typ = options.typ;
  const exp = options.exp === undefined ? NOW_S + 3600 : options.exp;
  const body = exp === null ? claims : { exp, ...claims };
  return new SignJWT(body).setProtectedHeader(header).sign(key);
}

function base64url(value: unknown): string {
  return Buffer.from(JSON.stringify(value)).toString('base64url');
}

/** An unsigned `alg: none` token (RFC 7519 §6), in the spelling given. */
export function unsignedToken(claims: Record<string, unknown>, alg = 'none'): string {
  return `${base64url({ alg, typ: 'JWT' })}.${base64url({ exp: NOW_S + 3600, ...claims })}.`;
}

/** A token with a hand-made header (signature garbage): for header-level checks. */
export function tokenWithHeader(
  header: Record<string, unknown>,
  claims: Record<string, unknown> = {},
): string {
  return `${base64url(header)}.${base64url(claims)}.c2lnbmF0dXJl`;
}

export interface LogEntry {
  readonly level: 'debug' | 'info' | 'warn' | 'error';
  readonly fields: Record<string, unknown>;
  readonly message: string;
}

export function recordingLogger(): AuthLogger & {
  entries: LogEntry[];
  messages(level?: LogEntry['level']): string[];
} {
  const entries: LogEntry[] = [];
  const at =
    (level: LogEntry['level']) =>
    (fields: Record<string, unknown>, message: string): void => {
      entries.push({ level, fields, message });
    };
  return {
    entries,
    debug: at('debug'),
    info: at('info'),
    warn: at('warn'),
    error: at('error'),
    messages: (level) =>
      entries.filter((entry) => !level || entry.level === level).map((entry) => entry.message),
  };
}

export interface FakeClock {
  now: () => number;
  set(ms: number): void;
  advance(ms: number): void;
}

export function fakeClock(start = NOW_MS): FakeClock {
  let current = start;
  return {
    now: () => current,
    set: (ms) => {
      current = ms;
    },
    advance: (ms) => {
      current += ms;
    },
  };
}

/** Asserts that a promise rejects with an AuthError of this reason (and status, when given). */
export async function rejectsWith(
  promise: Promise<unknown>,
  reason: AuthFailureReason,
  status?: number,
): Promise<AuthError> {
  let caught: unknown;
  try {
    await promise;
  } catch (error) {
    caught = error;
  }
  assert.ok(caught instanceof AuthError, `expected an AuthError ${reason}, got ${String(caught)}`);
  assert.equal(caught.reason, reason);
  if (status !== undefined) assert.equal(caught.status, status);
  return caught;
}

/** Same, for a synchronous call. */
export function throwsWith(call: () => unknown, reason: AuthFailureReason, status?: number): AuthError {
  let caught: unknown;
  try {
    call();
  } catch (error) {
    caught = error;
  }
  assert.ok(caught instanceof AuthError, `expected an AuthError ${reason}, got ${String(caught)}`);
  assert.equal(caught.reason, reason);
  if (status !== undefined) assert.equal(caught.status, status);
  return caught;
}

export function jwkOf(publicKey: KeyObject, extra: Record<string, unknown> = {}): Record<string, unknown> {
  return { ...publicKey.export({ format: 'jwk' }), ...extra };
}

type Handler = (request: IncomingMessage, response: ServerResponse) => void;

export interface TestServer {
  readonly url: string;
  /** Requests received so far. */
  readonly requests: () => number;
  /** Replace the handler (e.g. to rotate the key set). */
  handle(handler: Handler): void;
  /** Serve this JSON document with a Content-Length. */
  serveJson(document: unknown): void;
  close(): Promise<void>;
}

/** A real HTTP server on 127.0.0.1 and a kernel-chosen port. */
export async function startServer(
  handler: Handler = (_request, response) => response.end(),
): Promise<TestServer> {
  let current = handler;
  let count = 0;
  const server: Server = createServer((request, response) => {
    count += 1;
    current(request, response);
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}/jwks.json`,
    requests: () => count,
    handle(next) {
      current = next;
    },
    serveJson(document) {
      const body = JSON.stringify(document);
      current = (_request, response) => {
        response.writeHead(200, {
          'content-type': 'application/json',
          'content-length': Buffer.byteLength(body),
        });
        response.end(body);
      };
    },
    async close() {
      server.closeAllConnections();
      server.close();
      await once(server, 'close');
    },
  };
}

/*
 * The broker's HTTP API as the console calls it: same origin (the broker serves the console),
 * the operator's token (sessionStorage) on every call, `{"error": …}` bodies as ApiError.
 */

const TOKEN_KEY = 'herald.console.token';

export class ApiError extends Error {
  constructor(
    readonly status: number,
    message: string,
  ) {
    super(message);
  }
}

export function storedToken(): string | undefined {
  return sessionStorage.getItem(TOKEN_KEY) ?? undefined;
}

export function storeToken(token: string | undefined): void {
  if (token) sessionStorage.setItem(TOKEN_KEY, token);
  else sessionStorage.removeItem(TOKEN_KEY);
}

function headers(body: unknown): Record<string, string> {
  const token = storedToken();
  return {
    ...(token ? { authorization: `Bearer ${token}` } : {}),
    ...(body === undefined ? {} : { 'content-type': 'application/json' }),
  };
}

/** One call; 204 answers undefined, an error status throws ApiError with the broker's message. */
export async function api<T>(path: string, init: { method?: string; body?: unknown } = {}): Promise<T> {
  const response = await fetch(path, {
    method: init.method ?? 'GET',
    headers: headers(init.body),
    ...(init.body === undefined ? {} : { body: JSON.stringify(init.body) }),
  });
  if (response.status === 204) return undefined as T;
  const text = await response.text();
  let parsed: unknown;
  try {
    parsed = text === '' ? undefined : JSON.parse(text);
  } catch {
    parsed = text;
  }
  if (!response.ok) {
    const message =
      parsed && typeof parsed === 'object' && 'error' in parsed
        ? String((parsed as { error: unknown }).error)
        : `HTTP ${response.status}`;
    throw new ApiError(response.status, message);
  }
  return parsed as T;
}

export const post = <T>(path: string, body: unknown) => api<T>(path, { method: 'POST', body });

/** The Prometheus text of this node (`/metrics`, public). */
export async function metricsText(): Promise<string> {
  const response = await fetch('/metrics', { headers: headers(undefined) });
  if (!response.ok) throw new ApiError(response.status, `metrics: HTTP ${response.status}`);
  return response.text();
}

/** What the current token may do, found by asking (role names are configurable on the broker). */
export interface Capabilities {
  /** The broker refused a call for want of a token (JWT_ENABLED). */
  readonly authRequired: boolean;
  /** Why the token was refused (401), when it was. */
  readonly tokenProblem?: string;
  readonly read: boolean;
  readonly write: boolean;
  readonly admin: boolean;
}

const statusOf = (promise: Promise<unknown>) =>
  promise.then(
    () => 200,
    (error: unknown) => (error instanceof ApiError ? error.status : 0),
  );

/**
 * Probes that change nothing: a read view without a token (is auth on?), then with it: a read view (read-only level), a requeue with an empty body
 * (read-write level: authorised, it answers 400 before touching anything; refused, 401/403), and
 * the maintenance flags (admin level). The broker checks the level before reading the body.
 */
export async function probeCapabilities(): Promise<Capabilities> {
  const [anonymous, read, write, admin] = await Promise.all([
    fetch('/api/v1/resources/overview').then((response) => response.status),
    statusOf(api('/api/v1/resources/overview')),
    statusOf(post('/api/v1/dlq/requeue', {})),
    statusOf(api('/api/v1/system/maintenance')),
  ]);
  const authRequired = anonymous === 401;
  const token = storedToken();
  return {
    authRequired,
    ...(authRequired && token && [read, write, admin].includes(401)
      ? { tokenProblem: 'The broker refused this token (401): expired, or not signed with its key.' }
      : {}),
    read: read === 200,
    write: write === 400,
    admin: admin === 200,
  };
}

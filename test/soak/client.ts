import { setTimeout as sleep } from 'node:timers/promises';
import { Pool } from 'undici';

export interface Reply {
  readonly status: number;
  readonly text: string;
  /** Milliseconds from sending the request to reading the whole answer. */
  readonly ms: number;
}

/** What the client saw while a Redis outage was under way (requests sent inside the window). */
export interface OutageAnswers {
  /** Answers 503 to requests sent during an outage. */
  refused: number;
  /** The slowest of those 503s, in milliseconds. */
  maxRefusalMs: number;
}

/**
 * HTTP to a cluster of nodes as a real client does it: keep-alive pools, one node after the
 * other, and on a 503, a 5xx or a connection error the same request again on the next node
 * after a short backoff (the request must be safe to resend: every soak request is).
 */
export class ClusterClient {
  private readonly pools: Pool[];
  private next = 0;
  /** Requests that failed with a connection error (reset, refused) and were resent. */
  connectionErrors = 0;
  /** 503 answers (resent). */
  unavailable = 0;
  /** Other 5xx answers (resent too, but each is a defect worth reading the node's log for). */
  serverErrors = 0;
  /** The body of the last 5xx answer, for the progress log. */
  lastRefusal = '';
  private outageStartedAt: number | undefined;
  readonly outage: OutageAnswers = { refused: 0, maxRefusalMs: 0 };

  constructor(origins: readonly string[], connections = 16) {
    this.pools = origins.map(
      (origin) => new Pool(origin, { connections, headersTimeout: 60_000, bodyTimeout: 60_000 }),
    );
  }

  /** Marks the start (or, with `false`, the end) of a Redis outage for the 503 accounting. */
  setOutage(active: boolean): void {
    this.outageStartedAt = active ? performance.now() : undefined;
  }

  get inOutage(): boolean {
    return this.outageStartedAt !== undefined;
  }

  /**
   * One attempt on one node; throws on a connection error. A string body is sent as it is
   * (with `headers`), anything else as JSON.
   */
  async once(
    node: number,
    method: 'GET' | 'POST',
    path: string,
    body?: unknown,
    headers: Record<string, string> = {},
  ): Promise<Reply> {
    const pool = this.pools[node % this.pools.length] as Pool;
    const sentInOutage = this.inOutage;
    const started = performance.now();
    const response = await pool.request({
      method,
      path,
      headers:
        typeof body === 'string' || body === undefined
          ? headers
          : { 'content-type': 'application/json', ...headers },
      ...(body === undefined ? {} : { body: typeof body === 'string' ? body : JSON.stringify(body) }),
    });
    const text = await response.body.text();
    const ms = performance.now() - started;
    if (sentInOutage && response.statusCode === 503) {
      this.outage.refused += 1;
      this.outage.maxRefusalMs = Math.max(this.outage.maxRefusalMs, ms);
    }
    return { status: response.statusCode, text, ms };
  }

  /**
   * Sends until a node gives an answer that is not a 503/5xx/connection error, moving to the
   * next node after each failure; gives up (returns undefined) when `stop()` says so.
   */
  async retrying(
    method: 'GET' | 'POST',
    path: string,
    body?: unknown,
    stop: () => boolean = () => false,
    headers: Record<string, string> = {},
  ): Promise<Reply | undefined> {
    let backoff = 25;
    for (;;) {
      const node = this.next++;
      try {
        const reply = await this.once(node, method, path, body, headers);
        if (reply.status < 500) return reply;
        this.lastRefusal = `${reply.status} ${reply.text.slice(0, 200)}`;
        if (reply.status === 503) this.unavailable += 1;
        else this.serverErrors += 1;
      } catch {
        this.connectionErrors += 1;
      }
      if (stop()) return undefined;
      await sleep(backoff * (0.5 + Math.random()));
      backoff = Math.min(backoff * 2, 1000);
    }
  }

  async close(): Promise<void> {
    await Promise.all(this.pools.map((pool) => pool.destroy()));
  }
}

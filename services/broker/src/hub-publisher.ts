/*
 * Publishes the outbox's hub updates to a Mercure hub over HTTP (docs/broker-outbox.md): the
 * protocol's own POST, with a publisher token the broker signs itself. The hub keeps one update
 * per id while it is in its history (docs/hub.md, "Resent publishes"), so publishing an update
 * again, after a relay died or a reply was lost, delivers it once.
 */
import { createPrivateKey, createSecretKey, type KeyObject } from 'node:crypto';
import { HMAC_ALGORITHMS, type JwsAlgorithm } from '@herald/auth';
import type { Clock } from '@herald/redis';
import { SignJWT } from 'jose';
import type { Pool } from 'undici';
import type { HubUpdate } from './storage.js';

export interface HubPublisherOptions {
  /** The hub's publish URL (`…/.well-known/mercure`). */
  readonly url: URL;
  /** From signingKey: an HMAC secret (as the hub's MERCURE_PUBLISHER_JWT_KEY) or a private key. */
  readonly key: KeyObject;
  readonly algorithm: JwsAlgorithm;
  readonly clock: Clock;
  /** How long one POST may take before it counts as failed (the relay tries again). */
  readonly timeoutMs?: number;
}

/** What became of one update. */
export type PublishOutcome =
  | { readonly result: 'published' }
  /** The hub refused it for good (4xx other than 401, 408, 429): retrying cannot help. */
  | { readonly result: 'refused'; readonly reason: string }
  /** Not applied, or not known to be: try again, after `retryInMs` when the hub said. */
  | { readonly result: 'retry'; readonly reason: string; readonly retryInMs?: number };

/** How long a signed token is used (it is valid twice as long). */
const TOKEN_REUSE_MS = 5 * 60_000;
const DEFAULT_TIMEOUT_MS = 5000;

/** Statuses worth retrying besides 5xx: a token refused (the key may be fixed), a timeout, a limit. */
const RETRIED = new Set([401, 408, 425, 429]);

export function signingKey(key: string, algorithm: JwsAlgorithm): KeyObject {
  if ((HMAC_ALGORITHMS as readonly string[]).includes(algorithm))
    return createSecretKey(Buffer.from(key, 'utf8'));
  return createPrivateKey(key);
}

/** Connections to the hub: one per lane the relay publishes on at once, and a few more. */
const CONNECTIONS = 32;

export class HubPublisher {
  private token: { value: string; until: number } | undefined;
  private readonly path: string;

  /**
   * undici is loaded here, by a node with a hub to publish to only: a broker without one does
   * not carry it (~5 MB of a node's memory, docs/benchmarks.md "Footprint").
   */
  static async start(options: HubPublisherOptions): Promise<HubPublisher> {
    const { Pool } = await import('undici');
    return new HubPublisher(options, new Pool(options.url.origin, { connections: CONNECTIONS }));
  }

  private constructor(
    private readonly options: HubPublisherOptions,
    /** Kept-alive connections (undici's Pool: a fraction of fetch's cost per request). */
    private readonly pool: Pool,
  ) {
    this.path = `${options.url.pathname}${options.url.search}`;
  }

  close(): Promise<void> {
    return this.pool.close();
  }

  get url(): string {
    return this.options.url.href;
  }

  private async authorization(): Promise<string> {
    const now = this.options.clock.now();
    if (!this.token || this.token.until <= now) {
      const value = await new SignJWT({ mercure: { publish: [{ match: '*' }] } })
        .setProtectedHeader({ alg: this.options.algorithm, typ: 'JWT' })
        .setIssuedAt(Math.floor(now / 1000))
        .setExpirationTime(Math.floor((now + 2 * TOKEN_REUSE_MS) / 1000))
        .sign(this.options.key);
      this.token = { value, until: now + TOKEN_REUSE_MS };
    }
    return `Bearer ${this.token.value}`;
  }

  async publish(update: HubUpdate): Promise<PublishOutcome> {
    const form = new URLSearchParams();
    for (const topic of update.topics) form.append('topic', topic);
    form.set('id', update.id);
    form.set('data', update.data);
    if (update.private) form.set('private', 'on');
    if (update.type !== undefined) form.set('type', update.type);
    let status: number;
    let text: string;
    let retryAfter: string | string[] | undefined;
    try {
      const response = await this.pool.request({
        method: 'POST',
        path: this.path,
        headers: {
          authorization: await this.authorization(),
          'content-type': 'application/x-www-form-urlencoded',
        },
        body: form.toString(),
        headersTimeout: this.options.timeoutMs ?? DEFAULT_TIMEOUT_MS,
        bodyTimeout: this.options.timeoutMs ?? DEFAULT_TIMEOUT_MS,
      });
      status = response.statusCode;
      retryAfter = response.headers['retry-after'];
      text = await response.body.text().catch(() => '');
    } catch (error) {
      return { result: 'retry', reason: `hub unreachable: ${(error as Error).message}` };
    }
    if (status >= 200 && status < 300) return { result: 'published' };
    const reason = `hub answered ${status}${text ? `: ${text.slice(0, 200)}` : ''}`;
    if (status >= 500 || RETRIED.has(status)) {
      const after = Number(Array.isArray(retryAfter) ? retryAfter[0] : retryAfter);
      return Number.isFinite(after) && after > 0
        ? { result: 'retry', reason, retryInMs: after * 1000 }
        : { result: 'retry', reason };
    }
    return { result: 'refused', reason };
  }
}
